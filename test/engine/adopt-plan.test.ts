// The start-up plan over held tenders (src/engine/adopt.ts): which are adopted, which exited
// meanwhile, which are dismissed and why; and the fingerprint that ties a tender to the
// configuration it was started with, across the state file's encoding.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  configFingerprint,
  decodeMeta,
  encodeMeta,
  type HeldTender,
  planAdoption,
  type TenderMeta,
} from '../../src/engine/adopt.js';
import { unwrap } from '../../src/resources/errors.js';
import { decodeSnapshot, encodeSnapshot, type UnikernelRecord } from '../../src/wire/petrel-state.js';
import type { MacAddress, UnikernelConfig } from '../../src/wire/types.js';
import { canaryImage } from './guest.js';
import { canaryConfig, name } from './harness.js';

const one = await canaryConfig(canaryImage, ['wait', 'one'], {
  bridges: [{ netif: 'service', bridge: 'br0', mac: null }],
  failBehaviour: { kind: 'restart', exitCodes: [3, 4] },
  startup: 20,
});
const two = { ...one, arguments: ['wait', 'two'] };
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
/** What the state keeps of a configuration: the configuration without the image, and its digest. */
const kept = ({ image, ...config }: UnikernelConfig) => ({
  config,
  image: { digest: sha256(image), size: image.length },
});
const fingerprintOf = (config: UnikernelConfig) =>
  configFingerprint(kept(config).config, sha256(config.image));

function meta(config: UnikernelConfig, tap = 'ptap1'): TenderMeta {
  return {
    fingerprint: fingerprintOf(config),
    digest: 'ab'.repeat(32),
    image: '/run/petrel/:vm.img',
    fifo: '/run/petrel/fifo/:vm',
    nets: [{ netif: 'service', bridge: 'br0', tap, mac: '02:00:00:00:00:01' as MacAddress }],
  };
}

let nextPid = 100;
function held(tag: string, config: UnikernelConfig, change: Partial<HeldTender> = {}): HeldTender {
  return {
    pid: nextPid++,
    tag,
    meta: encodeMeta(meta(config)),
    exit: null,
    startedAt: new Date(1000),
    exitedAt: null,
    record: 'this',
    ...change,
  };
}

const stored = (text: string, config: UnikernelConfig): UnikernelRecord => ({
  name: name(text),
  ...kept(config),
});

describe('configuration fingerprint', () => {
  it('is the same for a configuration and what the state gives back for it', () => {
    const bytes = unwrap(encodeSnapshot({ unikernels: [stored(':vm', one)], policies: [], imported: [] }));
    const back = unwrap(decodeSnapshot(bytes)).unikernels[0] as UnikernelRecord;
    expect(configFingerprint(back.config, back.image.digest)).toBe(fingerprintOf(one));
  });

  it('is what an earlier petreld, which kept the image itself, gave an uncompressed image', () => {
    const canonical = (value: unknown): string => {
      if (value instanceof Uint8Array) return JSON.stringify(sha256(value));
      if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
      if (value !== null && typeof value === 'object') {
        const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
        return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
      }
      return JSON.stringify(value ?? null);
    };
    expect(fingerprintOf(one)).toBe(sha256(Buffer.from(canonical(one))));
  });

  it('differs for any change: arguments, image bytes, memory', () => {
    const image = Uint8Array.from(one.image);
    const last = image.length - 1;
    image[last] = (image[last] ?? 0) ^ 1;
    const fingerprints = [one, two, { ...one, image }, { ...one, memory: one.memory + 1 }].map(fingerprintOf);
    expect(new Set(fingerprints).size).toBe(4);
  });

  it('meta round-trips, and anything else reads as none', () => {
    expect(decodeMeta(encodeMeta(meta(one)))).toEqual(meta(one));
    const badMac = { netif: 'service', bridge: 'br0', tap: 'ptap1', mac: 'zz' };
    for (const bad of [
      '',
      'null',
      '{}',
      '{"v":2}',
      JSON.stringify({ ...meta(one), v: 1, nets: [{}] }),
      JSON.stringify({ ...meta(one), v: 1, nets: [badMac] }),
    ])
      expect(decodeMeta(bad)).toBeNull();
  });
});

describe('adoption plan', () => {
  it('adopts a running tender of a committed name and configuration whose record names it', () => {
    const tender = held(':vm', one);
    const plan = planAdoption([stored(':vm', one)], [tender]);
    expect(plan.adopt).toMatchObject([{ name: name(':vm'), held: tender, meta: meta(one) }]);
    expect(plan.exited).toEqual([]);
    expect(plan.dismiss).toEqual([]);
  });

  it('dismisses what nothing committed refers to, saying why', () => {
    const notInState = held(':other', one);
    const uncommitted = held(':vm', two);
    const recordedOther = held(':vm', one, { record: 'other' });
    const foreign = held(':vm', one, { meta: 'not ours' });
    const plan = planAdoption([stored(':vm', one)], [notInState, uncommitted, recordedOther, foreign]);
    expect(plan.adopt).toEqual([]);
    expect(plan.dismiss.map((d) => [d.held.pid, d.reason])).toEqual([
      [notInState.pid, 'not in the state'],
      [uncommitted.pid, 'started with a configuration that was not committed'],
      [foreign.pid, 'not a tender this petreld can take over'],
      [recordedOther.pid, 'its PID record names another process'],
    ]);
  });

  it('gives an exit while away to its unikernel once, the latest, unless one of that name runs', () => {
    const early = held(':vm', one, { exit: { code: 3, signal: null }, exitedAt: new Date(2000) });
    const late = held(':vm', one, { exit: { code: 4, signal: null }, exitedAt: new Date(3000) });
    const plan = planAdoption([stored(':vm', one)], [late, early]);
    expect(plan.exited.map((e) => e.held.pid)).toEqual([late.pid]);
    expect(plan.dismiss.map((d) => [d.held.pid, d.reason])).toEqual([
      [early.pid, 'an exit already dealt with'],
    ]);

    const running = held(':vm', one);
    const restarted = planAdoption([stored(':vm', one)], [early, running]);
    expect(restarted.adopt.map((a) => a.held.pid)).toEqual([running.pid]);
    expect(restarted.exited).toEqual([]);
    expect(restarted.dismiss.map((d) => d.held.pid)).toEqual([early.pid]);
  });

  it('adopts a tender whose PID record is missing: the holder vouches for it', () => {
    const tender = held(':vm', one, { record: 'none' });
    expect(planAdoption([stored(':vm', one)], [tender]).adopt.map((a) => a.held.pid)).toEqual([tender.pid]);
  });

  it('adopts at most one tender per name', () => {
    const a = held(':vm', one);
    const b = held(':vm', one);
    const plan = planAdoption([stored(':vm', one)], [a, b]);
    expect(plan.adopt.map((x) => x.held.pid)).toEqual([a.pid]);
    expect(plan.dismiss.map((d) => [d.held.pid, d.reason])).toEqual([
      [b.pid, 'another tender of this name runs'],
    ]);
  });
});
