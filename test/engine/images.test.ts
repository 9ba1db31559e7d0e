// Images live once in the store (petrel-differences.md (j)): one file per image whatever the
// number of unikernels using it, kept while anything running or waiting to restart uses it,
// gone with the last one; the state names digests; a damaged or missing image is noticed.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmod, readdir, readFile, readlink, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { deflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { STATE_FILES } from '../../src/engine/host.js';
import { unwrap } from '../../src/resources/errors.js';
import { decodeSnapshot } from '../../src/wire/petrel-state.js';
import { closingAfterEach } from './each.js';
import { canaryImage, canaryNetImage } from './guest.js';
import {
  canaryConfig,
  createCommand,
  makeEngine,
  name,
  replyText,
  storedNames,
  storedState,
  type TestEngine,
  waitForLine,
} from './harness.js';

const closeAfterTest = closingAfterEach();

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const store = (engine: TestEngine) => readdir(path.join(engine.stateDir, 'images'));
describe('the image store', () => {
  it('two unikernels with the same image share one file; it goes with the last of them', async () => {
    const t = closeAfterTest(await makeEngine());
    const image = await readFile(canaryImage);
    for (const vm of [':one', ':two']) {
      const reply = await t.run(vm, createCommand(await canaryConfig(canaryImage, ['wait', vm])));
      expect(replyText(reply)).toBe('created unikernel');
    }
    expect(await store(t)).toEqual([sha256(image)]);
    // Each tender runs the store file through its own link in the run directory.
    for (const vm of [':one', ':two']) {
      expect(await readlink(path.join(t.runDir, `${vm}.img`))).toBe(
        path.join(t.stateDir, 'images', sha256(image)),
      );
    }
    expect(replyText(await t.run(':one', { type: 'unikernel-destroy' }))).toBe('destroyed unikernel');
    expect(await store(t)).toEqual([sha256(image)]);
    expect(replyText(await t.run(':two', { type: 'unikernel-destroy' }))).toBe('destroyed unikernel');
    expect(await store(t)).toEqual([]);
    expect((await readdir(t.runDir)).filter((f) => f.endsWith('.img'))).toEqual([]);
  });

  it('a compressed image is stored inflated, named by the digest info reports', async () => {
    const t = closeAfterTest(await makeEngine());
    const image = await readFile(canaryImage);
    const config = await canaryConfig(canaryImage, ['wait', 'z'], {
      image: deflateSync(image),
      compressed: true,
    });
    expect(replyText(await t.run(':z', createCommand(config)))).toBe('created unikernel');
    expect(await store(t)).toEqual([sha256(image)]);
    const info = await t.run(':z', { type: 'unikernel-info', release: '2.7' });
    const entry =
      info.kind === 'reply' && info.reply.type === 'unikernel-info' ? info.reply.entries[0] : null;
    expect(Buffer.from(entry?.info.digest ?? []).toString('hex')).toBe(sha256(image));
    const record = (await storedState(t.stateDir)).unikernels[0];
    expect(record?.image).toEqual({ digest: sha256(image), size: image.length });
    expect(record?.config.compressed).toBe(true);
  });

  it('an image streamed after the create, compressed, is inflated into the store as it arrives', async () => {
    const t = closeAfterTest(await makeEngine());
    const image = await readFile(canaryImage);
    const zipped = deflateSync(image, { level: 9 });
    const config = await canaryConfig(canaryImage, ['wait', 's'], {
      image: new Uint8Array(0),
      compressed: true,
    });
    async function* chunks() {
      for (let at = 0; at < zipped.length; at += 1000) yield zipped.subarray(at, at + 1000);
    }
    const reply = await t.engine.execute({
      name: name(':s'),
      command: createCommand(config),
      input: chunks(),
    });
    expect(replyText(reply)).toBe('created unikernel');
    await waitForLine(t.hub, ':s', 'petrel-canary s');
    expect(await store(t)).toEqual([sha256(image)]);
    // A stream that breaks is refused and leaves nothing behind.
    async function* broken() {
      yield zipped.subarray(0, 100);
      throw new Error('connection closed inside a stream');
    }
    const refused = await t.engine.execute({
      name: name(':b'),
      command: createCommand(config),
      input: broken(),
    });
    expect(replyText(refused)).toBe('Failure: receiving the image failed: connection closed inside a stream');
    expect(await store(t)).toEqual([sha256(image)]);
    expect((await readdir(path.join(t.stateDir, 'images'))).filter((f) => f.includes('petrel-tmp'))).toEqual(
      [],
    );
  });

  it('a force-create with another image swaps the stored file; the state names the new digest', async () => {
    const t = closeAfterTest(await makeEngine());
    const first = await readFile(canaryImage);
    const other = Buffer.concat([first, Buffer.from('appended bytes the tender ignores')]);
    await t.run(':vm', createCommand(await canaryConfig(canaryImage, ['wait', 'a'])));
    const reply = await t.run(
      ':vm',
      createCommand(await canaryConfig(canaryImage, ['wait', 'b'], { image: other }), true),
    );
    expect(replyText(reply)).toBe('created unikernel');
    // The tender ignores bytes after the ELF's segments: the guest runs.
    await waitForLine(t.hub, ':vm', 'petrel-canary b');
    expect(await store(t)).toEqual([sha256(other)]);
    expect((await storedState(t.stateDir)).unikernels.map((u) => u.image.digest)).toEqual([sha256(other)]);
  });

  it('a restart reads the image again and refuses a damaged one, keeping the unikernel running', async () => {
    const t = closeAfterTest(await makeEngine());
    const image = await readFile(canaryImage);
    const created = await t.run(':vm', createCommand(await canaryConfig(canaryImage, ['wait', 'a'])));
    expect(replyText(created)).toBe('created unikernel');
    // The reply comes once the tender is spawned, not once it has read its image: damaging the
    // file before the guest runs would make the tender fail instead of the restart.
    await waitForLine(t.hub, ':vm', 'petrel-canary a');
    const file = path.join(t.stateDir, 'images', sha256(image));
    await chmod(file, 0o600);
    const damaged = Buffer.from(image);
    damaged.writeUInt8(damaged.readUInt8(damaged.length - 1) ^ 1, damaged.length - 1);
    await writeFile(file, damaged);
    const reply = await t.run(':vm', { type: 'unikernel-restart', form: 'keep' });
    expect(replyText(reply)).toBe(
      `Failure: image ${sha256(image)} in the store is damaged (its SHA-256 is now ${sha256(damaged)})`,
    );
    expect(t.engine.running).toEqual([':vm']);
  });

  it('the state is small: digests, not images; a command appends its change only', async () => {
    const t = closeAfterTest(await makeEngine());
    const image = await readFile(canaryImage);
    const journal = path.join(t.stateDir, STATE_FILES.journal);
    const sizes: number[] = [];
    for (const vm of [':a', ':b', ':c']) {
      await t.run(vm, createCommand(await canaryConfig(canaryImage, ['wait', vm])));
      sizes.push((await readFile(journal)).length);
    }
    const growth = sizes.map((size, i) => size - (sizes[i - 1] ?? 0)).slice(1);
    expect(growth[0]).toBe(growth[1]);
    expect(growth[0]).toBeLessThan(400);
    expect(sizes[2]).toBeLessThan(image.length / 10);
  });

  it('start-up drops a unikernel whose image is missing, naming it, and removes stray images', async () => {
    const t = closeAfterTest(await makeEngine());
    const image = await readFile(canaryImage);
    const other = Buffer.concat([image, Buffer.from('x')]);
    await t.run(':gone', createCommand(await canaryConfig(canaryImage, ['wait', 'a'])));
    await t.run(':kept', createCommand(await canaryConfig(canaryImage, ['wait', 'b'], { image: other })));
    await t.engine.shutdown();
    await rm(path.join(t.stateDir, 'images', sha256(image)), { force: true });
    const stray = path.join(t.stateDir, 'images', 'ab'.repeat(32));
    await writeFile(stray, 'nobody names me');
    const lines: Record<string, unknown>[] = [];
    const { default: pino } = await import('pino');
    const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const second = closeAfterTest(
      await makeEngine({ log }, { dir: path.dirname(t.stateDir), netns: t.netns }),
    );
    expect(second.engine.running).toEqual([':kept']);
    expect(lines).toContainEqual(
      expect.objectContaining({
        level: 50,
        name: ':gone',
        reason: `image ${sha256(image)} is missing from the store`,
      }),
    );
    expect(await storedNames(t.stateDir)).toEqual([':kept']);
    expect(await store(t)).toEqual([sha256(other)]);
  });

  it('a unikernel a start cannot bring back is dropped, its image kept until the next start', async () => {
    const t = closeAfterTest(await makeEngine());
    const image = await readFile(canaryNetImage);
    const config = await canaryConfig(canaryNetImage, ['wait', 'n'], {
      bridges: [{ netif: 'service', bridge: 'br0', mac: null }],
    });
    expect(replyText(await t.run(':net', createCommand(config)))).toBe('created unikernel');
    await t.engine.shutdown();
    // A host broken at boot (Albatross #203): the bridge is gone.
    spawnSync('ip', ['-n', t.netns.name, 'link', 'del', 'br0']);
    const second = closeAfterTest(await t.reopen());
    expect(second.engine.running).toEqual([]);
    expect(await storedNames(t.stateDir)).toEqual([]);
    // petrel.state.started still names it, and its image is still there to go back to.
    const started = unwrap(decodeSnapshot(await readFile(path.join(t.stateDir, STATE_FILES.started))));
    expect(started.unikernels.map((u) => u.image.digest)).toEqual([sha256(image)]);
    expect(await store(t)).toEqual([sha256(image)]);
    await second.engine.shutdown();
    const third = await t.reopen();
    await third.close();
    expect(await store(t)).toEqual([]);
  });
});
