// Whether hvt guests may use SSE: the probe boots sse.hvt and says so; preflight turns a "no" into
// a WARN that names the consequence and points to spt, never a failure. On this host's KVM the
// guest really runs; the outcomes KVM would give elsewhere are played by the fake /dev/kvm
// (TEST DOUBLE, native/tools/fake-kvm.c) under the real petrel-hvt and the real sse.hvt.

import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildConfig } from '../../src/daemon/config.js';
import { formatChecks, preflight } from '../../src/daemon/preflight.js';
import { type ProbeOptions, probeHost } from '../../src/tender/probe.js';
import { bundledSseGuest, probeSse, SSE_HINT, type SseGuest } from '../../src/tender/sse-probe.js';
import { tempDir } from '../host/helpers.js';
import { kvmUsable } from '../native/kvm.js';
import { build, fakeKvm, requireBuilt, tender } from '../native/native.js';

const image = path.join(build, 'sse.hvt');
/** Where the kernel shows kvm-pvm, the nested software KVM on which SSE kills hvt guests. */
const kvmPvm = existsSync('/sys/module/kvm_pvm');

/** Letters only, so parallel probes (here and in other checkouts) never share a probe tap. */
const privatePrefix = (): string =>
  `t${randomBytes(3)
    .toString('hex')
    .replace(/\d/gu, (d) => 'ghijklmnop'[Number(d)] ?? 'x')}`;

let dir: string;
let cleanup: () => Promise<void>;
beforeEach(async () => {
  requireBuilt();
  ({ dir, cleanup } = await tempDir());
});
afterEach(async () => {
  await cleanup();
});

/**
 * petrel-hvt on the fake /dev/kvm playing `script` for whatever guest it loads; the probe gives
 * its commands only PATH, so the wrapper sets the preload itself. Each run is noted in `runs`.
 */
async function fakeKvmTender(script: string): Promise<SseGuest & { runs: string }> {
  const wrapper = path.join(dir, 'fake-kvm-hvt');
  const runs = path.join(dir, 'runs');
  await writeFile(
    wrapper,
    `#!/bin/sh\necho run >> '${runs}'\nFAKEKVM_SCRIPT='${script}' LD_PRELOAD='${fakeKvm}' exec '${tender}' "$@"\n`,
  );
  await chmod(wrapper, 0o755);
  return { tender: wrapper, image, runs };
}

describe('probeSse', () => {
  it.skipIf(!kvmUsable)('on this host: the bundled tender boots sse.hvt, and kvm-pvm is a no', async () => {
    const found = await probeSse(bundledSseGuest(tender), 10_000);
    if (kvmPvm) {
      expect(found.value).toBe(false);
      expect(found.problem?.detail).toMatch(
        /^an SSE instruction kills hvt guests on this host \(\/dev\/kvm is kvm-pvm, a nested software KVM\): KVM: internal error exit: suberror=0x1\. hvt unikernels that use floating point \(every MirageOS unikernel\) die at their first SSE instruction$/u,
      );
      expect(found.problem?.hint).toBe(SSE_HINT);
      expect(SSE_HINT).toMatch(/under spt \(--runtimes spt\)/u);
    } else {
      expect(found).toEqual({ value: true });
    }
  });

  it('a guest that halts with 0 (the sum was 3) may use SSE', async () => {
    expect(await probeSse(await fakeKvmTender('halt,0'), 10_000)).toEqual({ value: true });
  });

  it("KVM's internal error at the SSE instruction is a no, with the tender's words", async () => {
    const found = await probeSse(await fakeKvmTender('exit,17,1'), 10_000);
    expect(found.value).toBe(false);
    expect(found.problem?.detail).toContain('an SSE instruction kills hvt guests on this host');
    expect(found.problem?.detail).toContain('KVM: internal error exit: suberror=0x1.');
  });

  it('a wrong sum (halt 2) is a no too', async () => {
    const found = await probeSse(await fakeKvmTender('halt,2'), 10_000);
    expect(found.value).toBe(false);
    expect(found.problem?.detail).toMatch(/gave a wrong sum/u);
  });

  it('an end that says nothing about SSE says nothing', async () => {
    // A triple fault, another guest status, a tender that cannot start, a missing image.
    for (const script of ['exit,8', 'halt,7']) {
      expect(await probeSse(await fakeKvmTender(script), 10_000)).toEqual({ value: null });
    }
    expect(await probeSse({ tender: path.join(dir, 'none'), image }, 10_000)).toEqual({ value: null });
    const noImage = { ...(await fakeKvmTender('halt,0')), image: path.join(dir, 'sse.hvt') };
    expect(await probeSse(noImage, 10_000)).toEqual({ value: null });
  });
});

/** Sees only the test's files; kvm answered by a stand-in for kvm-probe when `kvm`. */
async function options(kvm: boolean, sseGuest: SseGuest | null): Promise<ProbeOptions> {
  const kvmProbe = path.join(dir, 'kvm-probe');
  await writeFile(
    kvmProbe,
    kvm ? "#!/bin/sh\necho 'api 12'\n" : "#!/bin/sh\necho 'open 2 No such file or directory' >&2\nexit 2\n",
  );
  await chmod(kvmProbe, 0o755);
  return {
    stateDir: path.join(dir, 'state'),
    searchPath: '',
    bundledHvt: null,
    bundledSpt: null,
    kvmProbe,
    kvmDevice: path.join(dir, 'kvm'),
    tapPrefix: privatePrefix(),
    sseGuest,
  };
}

describe('probeHost', () => {
  it('reports hvtSse false with the problem, once KVM answered', async () => {
    const report = await probeHost(await options(true, await fakeKvmTender('exit,17,1')));
    expect(report.kvm).toBe(true);
    expect(report.hvtSse).toBe(false);
    expect(report.problems.hvtSse?.hint).toBe(SSE_HINT);
  });

  it('reports hvtSse true where the guest ran, with no problem', async () => {
    const report = await probeHost(await options(true, await fakeKvmTender('halt,0')));
    expect(report.hvtSse).toBe(true);
    expect(report.problems.hvtSse).toBeUndefined();
  });

  it('without KVM the guest is not even started, and nothing is claimed', async () => {
    const guest = await fakeKvmTender('halt,0');
    const report = await probeHost(await options(false, guest));
    expect(report.kvm).toBe(false);
    expect('hvtSse' in report).toBe(false);
    expect(report.problems.hvtSse).toBeUndefined();
    expect(existsSync(guest.runs)).toBe(false);
  });

  it('without a bundled tender (bundledHvt null) there is nothing to try it with', async () => {
    const { sseGuest: _default, ...rest } = await options(true, null);
    const report = await probeHost(rest);
    expect('hvtSse' in report).toBe(false);
  });
});

describe('preflight', () => {
  const config = (runtimes: string) => {
    const built = buildConfig({
      flags: {
        runtimes,
        stateDir: path.join(dir, 'state'),
        runDir: path.join(dir, 'run'),
        tapPrefix: privatePrefix(),
      },
    });
    if (!built.ok) throw new Error(built.error.message);
    return built.value;
  };

  it('a no is a WARN naming the consequence and pointing to spt, never fatal, even for hvt', async () => {
    const report = await probeHost(await options(true, await fakeKvmTender('exit,17,1')));
    for (const runtimes of ['hvt', 'spt', 'hvt,spt']) {
      const check = (await preflight(config(runtimes), report)).find((r) => r.name === 'hvtSse');
      expect(check).toMatchObject({ status: 'WARN', fatal: false, fix: SSE_HINT });
      expect(check?.detail).toMatch(/every MirageOS unikernel\) die at their first SSE instruction$/u);
    }
    const table = formatChecks(await preflight(config('hvt'), report));
    expect(table).toMatch(/^hvtSse\s+WARN\s+no\s+an SSE instruction kills hvt guests on this host/mu);
    expect(table).toMatch(/^\s+fix: run unikernels that use floating point under spt \(--runtimes spt\)/mu);
  });

  it('a yes passes; an unknown has no line', async () => {
    const yes = await probeHost(await options(true, await fakeKvmTender('halt,0')));
    expect((await preflight(config('hvt'), yes)).find((r) => r.name === 'hvtSse')).toMatchObject({
      status: 'PASS',
      detail: 'an hvt guest ran an SSE instruction',
    });
    const unknown = await probeHost(await options(false, null));
    expect((await preflight(config('hvt'), unknown)).some((r) => r.name === 'hvtSse')).toBe(false);
  });
});
