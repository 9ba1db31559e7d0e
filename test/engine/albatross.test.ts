// Moving either way between Albatross state files (images inside) and Petrel's state: start-up
// imports a file once (its images to the store), migrates the file an earlier Petrel wrote,
// and an export writes State [6] that imports back to the same unikernels and digests.
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { deflateSync, inflateSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { exportAlbatrossState } from '../../src/engine/albatross.js';
import { STATE_FILES } from '../../src/engine/host.js';
import { unwrap } from '../../src/resources/errors.js';
import { makePolicy } from '../../src/resources/policy.js';
import { solo5Config, upgradeState } from '../../src/wire/shapes.js';
import { decodeState, encodeState } from '../../src/wire/state.js';
import type { State, UnikernelConfigV3 } from '../../src/wire/types.js';
import { canaryImage } from './guest.js';
import { makeEngine, name, storedState, type TestEngine } from './harness.js';

const engines: TestEngine[] = [];
afterEach(async () => {
  for (const e of engines.splice(0).reverse()) await e.close();
});
const open = async (...args: Parameters<typeof makeEngine>) => {
  const engine = await makeEngine(...args);
  engines.push(engine);
  return engine;
};

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const policy = unwrap(makePolicy({ vms: 4, memory: 64, cpuids: [0], block: null, bridges: [] }));

/** What the running engine and its state say: name → digest, and the store's files. */
async function seen(t: TestEngine) {
  const state = await storedState(t.stateDir);
  return {
    running: [...t.engine.running].sort(),
    digests: Object.fromEntries(
      state.unikernels.map((u) => [`${u.name.path.join(':')}:${u.name.label}`, u.image.digest]),
    ),
    store: (await readdir(path.join(t.stateDir, 'images'))).sort(),
  };
}

describe('importing an Albatross state file', () => {
  it('[3] as Albatross 2.1 writes it: a compressed image restarting on any exit, no policies', async () => {
    const image = await readFile(canaryImage);
    const v3: UnikernelConfigV3 = {
      typ: 'solo5',
      compressed: true,
      image: deflateSync(image, { level: 9 }),
      failBehaviour: { kind: 'restart', exitCodes: [] },
      cpuid: 0,
      memory: 4,
      blocks: [],
      bridges: [],
      arguments: ['wait', 'imported'],
    };
    const file = unwrap(encodeState({ version: 3, unikernels: [{ name: name(':ctl'), config: v3 }] }));
    const first = await open();
    await first.engine.shutdown();
    const t = await open(
      { importState: { bytes: file, source: 'state.albatross' } },
      {
        dir: path.dirname(first.stateDir),
        netns: first.netns,
      },
    );
    expect(await seen(t)).toEqual({
      running: [':ctl'],
      digests: { ':ctl': sha256(image) },
      store: [sha256(image)],
    });
    const record = (await storedState(t.stateDir)).unikernels[0];
    expect(record?.config).toMatchObject({
      compressed: true,
      failBehaviour: v3.failBehaviour,
      addName: true,
    });

    // Left in the configuration, the flag does not import the file a second time.
    await t.engine.shutdown();
    const again = await t.reopen({ importState: { bytes: file, source: 'state.albatross' } });
    engines.push(again);
    expect((await seen(again)).running).toEqual([':ctl']);
    expect((await storedState(again.stateDir)).unikernels).toHaveLength(1);
  });

  it('[6] written by this codec, with policies; a name already here refuses the whole import', async () => {
    const image = await readFile(canaryImage);
    const other = Buffer.concat([image, Buffer.from('another one')]);
    const state: State = {
      version: 6,
      unikernels: [
        {
          name: name('team:a'),
          config: solo5Config(image, { addName: false, memory: 4, arguments: ['wait', 'a'] }),
        },
        {
          name: name('team:b'),
          config: solo5Config(deflateSync(other), {
            compressed: true,
            addName: false,
            memory: 4,
            arguments: ['wait', 'b'],
          }),
        },
      ],
      policies: [{ path: name('team:').path, policy }],
    };
    const file = unwrap(encodeState(state));
    const t = await open({ importState: { bytes: file, source: 'six' } });
    expect(await seen(t)).toEqual({
      running: ['team:a', 'team:b'],
      digests: { 'team:a': sha256(image), 'team:b': sha256(other) },
      store: [sha256(image), sha256(other)].sort(),
    });
    expect((await storedState(t.stateDir)).policies.map((p) => p.path)).toEqual([['team']]);

    const clash = unwrap(encodeState({ ...state, unikernels: [state.unikernels[0] as never], policies: [] }));
    await t.engine.shutdown();
    await expect(t.reopen({ importState: { bytes: clash, source: 'clash' } })).rejects.toThrow(
      'restore failed: import: clash: unikernel team:a exists already',
    );
  });

  it('export → import: the same unikernels, configurations and digests', async () => {
    const image = await readFile(canaryImage);
    const other = Buffer.concat([image, Buffer.from('x'.repeat(5000))]);
    const state: State = {
      version: 6,
      unikernels: [
        {
          name: name(':raw'),
          config: solo5Config(image, { memory: 4, addName: false, arguments: ['wait', 'r'] }),
        },
        {
          name: name('team:zip'),
          config: solo5Config(deflateSync(other), {
            compressed: true,
            memory: 4,
            addName: false,
            arguments: ['wait', 'z'],
          }),
        },
      ],
      policies: [{ path: name('team:').path, policy }],
    };
    const t = await open({ importState: { bytes: unwrap(encodeState(state)), source: 'in' } });
    await t.engine.shutdown();
    const out = path.join(path.dirname(t.stateDir), 'exported');
    const exported = await exportAlbatrossState(t.host, await storedState(t.stateDir), out);
    expect(exported).toMatchObject({ ok: true, value: { unikernels: 2 } });
    const back = upgradeState(unwrap(decodeState(await readFile(out))));
    expect(back.policies.filter((p) => p.path.length > 0)).toEqual(state.policies);
    const images = Object.fromEntries(
      back.unikernels.map((u) => [
        u.name.label,
        sha256(u.config.compressed ? inflateSync(u.config.image) : u.config.image),
      ]),
    );
    expect(images).toEqual({ raw: sha256(image), zip: sha256(other) });
    const strip = (s: State) =>
      upgradeState(s).unikernels.map(({ name: n, config: { image: _, ...rest } }) => ({ n, rest }));
    expect(strip(unwrap(decodeState(await readFile(out))))).toEqual(strip(state));

    const fresh = await open({ importState: { bytes: await readFile(out), source: out } });
    expect(await seen(fresh)).toEqual({
      running: [':raw', 'team:zip'],
      digests: { ':raw': sha256(image), 'team:zip': sha256(other) },
      store: [sha256(image), sha256(other)].sort(),
    });
  });
});

describe('migrating the state file of an earlier Petrel (images inside)', () => {
  it('moves the images to the store once and keeps the old file as a backup', async () => {
    const image = await readFile(canaryImage);
    const first = await open();
    await first.engine.shutdown();
    const old = unwrap(
      encodeState({
        version: 6,
        unikernels: [
          { name: name(':old'), config: solo5Config(image, { memory: 4, arguments: ['wait', 'o'] }) },
        ],
        policies: [],
      }),
    );
    // A state directory as an earlier Petrel left it: only `state`, with the images inside.
    for (const file of [STATE_FILES.snapshot, STATE_FILES.journal, STATE_FILES.started])
      await rm(path.join(first.stateDir, file), { force: true });
    await writeFile(path.join(first.stateDir, STATE_FILES.legacy), old);
    const t = await first.reopen();
    engines.push(t);
    expect(await seen(t)).toEqual({
      running: [':old'],
      digests: { ':old': sha256(image) },
      store: [sha256(image)],
    });
    expect(existsSync(path.join(t.stateDir, STATE_FILES.legacy))).toBe(false);
    expect(await readFile(path.join(t.stateDir, STATE_FILES.legacyRetired))).toEqual(Buffer.from(old));
  });
});
