// Statistics of a canary VM run by petreld in-process (its own engine, tender and tap): the
// tender's pid is what is reported, and its tap's counters move when frames pass.
import { readFileSync } from 'node:fs';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildConfig } from '../../src/daemon/config.js';
import { createDaemon, type Daemon } from '../../src/daemon/daemon.js';
import { unwrap } from '../../src/resources/errors.js';
import { parseName } from '../../src/resources/name.js';
import { commandFrame, type Exchange, open, request, said } from '../daemon/client.js';
import {
  build,
  canaryNetImage,
  guestMode,
  probeWithFakeKvm as probe,
  testKvmDevice,
  testTender,
} from '../engine/guest.js';
import { canaryConfig, createCommand, makeNetns } from '../engine/harness.js';
import { ipIn, sendFrames, statsOf, until } from './helpers.js';

let dir: string;
let netns: ReturnType<typeof makeNetns>;
let daemon: Daemon | undefined;
let watch: Exchange | undefined;

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'petreld-stats-'));
  netns = makeNetns();
});
afterEach(async () => {
  // An open subscription would keep the socket server from closing.
  watch?.close();
  await watch?.closed;
  watch = undefined;
  await daemon?.stop({ stopGuests: true });
  daemon = undefined;
  netns.destroy();
  await rm(dir, { recursive: true, force: true });
});

/**
 * The tender for this test. With real guests, the usual one (the VM runs canary-net `net-echo`).
 * With the fake-KVM TEST DOUBLE, whose `wait` guest never touches its net device, a VM with a
 * net device gets a scripted guest that behaves like net-echo: each time POLL reports a frame it
 * reads one (the tap's transmit counters) and writes one back (its receive counters). Everything
 * else, the boot canary included, goes to the usual fake-KVM tender.
 */
async function statsTender(): Promise<string> {
  const usual = await testTender(dir);
  if (guestMode === 'real') return usual;
  const frame = `ffffffffffff02000000000288b5${'ab'.repeat(46)}`;
  const echo = Array.from({ length: 100 }, () => `poll,60000000000;nr,1,2048;nw,1,${frame}`).join(';');
  const wrapper = path.join(dir, 'stats-hvt');
  await writeFile(
    wrapper,
    `#!/bin/sh
# TEST DOUBLE: a scripted net-echo guest for VMs with a net device (test/stats/daemon.test.ts).
# petrel-jail-allow: ${usual} ${path.join(build, 'petrel-hvt')} ${path.join(build, 'fake-kvm.so')}
case " $* " in *" --net:"*) ;; *) exec '${usual}' "$@";; esac
FAKEKVM_SCRIPT='puts,petrel-canary net-echo\\n;${echo};sleep' LD_PRELOAD='${path.join(build, 'fake-kvm.so')}' exec '${path.join(build, 'petrel-hvt')}' "$@"
`,
  );
  await chmod(wrapper, 0o755);
  return wrapper;
}

const sock = (name: string) => path.join(dir, 'run', 'util', name);

/** The `/proc/<pid>/stat` fields by their proc(5) number, as the test reads them itself. */
function statField(pid: number, n: number): bigint {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return BigInt(
    stat
      .slice(stat.lastIndexOf(')') + 2)
      .trim()
      .split(' ')[n - 3] as string,
  );
}

describe('petreld statistics', () => {
  it('a canary on a bridge: its tender pid is sampled, and its tap counters move as frames pass', async () => {
    const config = unwrap(
      buildConfig({
        flags: {
          stateDir: path.join(dir, 'state'),
          runDir: path.join(dir, 'run'),
          tenderHvt: await statsTender(),
          kvmDevice: testKvmDevice,
          canaryDeadline: '3s',
          stopTimeout: '2s',
          statsInterval: '200ms',
        },
      }),
    );
    daemon = createDaemon({
      config,
      log: pino({ level: process.env.PETREL_TEST_LOG ?? 'silent' }),
      netns: netns.name,
      probe,
    });
    unwrap(await daemon.start());
    const vm = await canaryConfig(canaryNetImage, ['net-echo'], {
      bridges: [{ netif: 'service', bridge: 'br0', mac: null }],
    });
    const created = await request(sock('vmmd.sock'), ':statvm', createCommand(vm));
    expect(created.map(said)).toEqual(['created unikernel']);
    const pid = daemon.engine.pidOf(unwrap(parseName(':statvm')));
    if (pid === undefined) throw new Error('no tender pid');

    // The test's own port on the same bridge, to send frames the bridge floods to the VM's tap.
    ipIn(
      netns.name,
      ['tuntap', 'add', 'dev', 'speer0', 'mode', 'tap'],
      ['link', 'set', 'speer0', 'master', 'br0'],
      ['link', 'set', 'speer0', 'up'],
    );

    const stream = open(sock('stat.sock'), commandFrame(':', { type: 'stats-subscribe' }));
    watch = stream;
    await stream.waitFor(2);
    expect(said(stream.messages[0])).toBe('subscribed');
    const first = statsOf(stream.messages)[0];
    expect(first?.name).toBe(':statvm');
    const kinfo = first?.stats.kinfoMem;
    // The tender's own process: memory as /proc says (vsize exactly; rss of a sleeping tender
    // within a few pages of what the test reads now).
    expect(kinfo?.vsize).toBe(statField(pid, 23));
    expect(Number(kinfo?.rss)).toBeGreaterThan(0);
    expect(Math.abs(Number((kinfo?.rss ?? 0n) - statField(pid, 24)))).toBeLessThan(16);
    expect(first?.stats.rusage.minflt).toBeGreaterThan(0n);
    expect(first?.stats.ifdata.map((i) => i.bridge)).toEqual(['service']);

    const before = first?.stats.ifdata[0];
    await sendFrames(netns.name, 'speer0');
    const seen = stream.messages.length;
    await until(() => stream.messages.length > seen, 'a sample after the frames');
    const after = statsOf(stream.messages).at(-1)?.stats.ifdata[0];
    // Frames from the bridge that the guest read count as the tap's output, its echoes as input.
    expect(after?.outputPackets).toBeGreaterThan(before?.outputPackets ?? 0n);
    expect(after?.outputBytes).toBeGreaterThan(before?.outputBytes ?? 0n);
    expect(after?.inputPackets).toBeGreaterThan(before?.inputPackets ?? 0n);
  });
});
