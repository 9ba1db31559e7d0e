import { chmod, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { findTender, type LookupOptions } from '../../src/tender/lookup.js';
import { failure, tempDir, value } from '../host/helpers.js';
import { writeFakeTender } from './fake-tender.js';

let root: string;
let cleanup: () => Promise<void>;
let stateDir: string;
let bin1: string;
let bin2: string;
let bundled: string;

beforeEach(async () => {
  ({ dir: root, cleanup } = await tempDir());
  stateDir = path.join(root, 'state');
  bin1 = path.join(root, 'bin1');
  bin2 = path.join(root, 'bin2');
  for (const d of [stateDir, bin1, bin2, path.join(root, 'native')]) await mkdir(d);
  bundled = path.join(root, 'native', 'petrel-hvt');
});
afterEach(async () => {
  await cleanup();
});

function options(extra: Partial<LookupOptions> = {}): LookupOptions {
  return {
    kind: 'hvt',
    abiVersion: 2,
    stateDir,
    searchPath: `relative/bin:${bin1}:${bin2}`,
    bundledHvt: bundled,
    ...extra,
  };
}

describe('tender lookup, in one order', () => {
  it('finds an installed solo5-spt before the bundled petrel-spt: both speak ABI 2, as for hvt', async () => {
    await writeFakeTender(bundled);
    const spt = options({ kind: 'spt', abiVersion: 2, bundledSpt: bundled });
    expect(await findTender(spt)).toEqual({ ok: true, value: bundled });
    await writeFakeTender(path.join(stateDir, 'solo5-spt'));
    expect(await findTender(spt)).toEqual({ ok: true, value: `${stateDir}/solo5-spt` });
    await writeFakeTender(path.join(bin2, 'solo5-spt.2'));
    expect(await findTender(spt)).toEqual({ ok: true, value: path.join(bin2, 'solo5-spt.2') });
  });

  it('walks <dbdir>/solo5-hvt.V, PATH solo5-hvt.V, <dbdir>/solo5-hvt, PATH solo5-hvt, then the bundled one', async () => {
    const order = [
      path.join(stateDir, 'solo5-hvt.2'),
      path.join(bin1, 'solo5-hvt.2'),
      path.join(stateDir, 'solo5-hvt'),
      path.join(bin2, 'solo5-hvt'),
      bundled,
    ];
    for (const file of order) await writeFakeTender(file);
    // Make the winner non-executable each time: the next candidate must be found.
    for (const expected of order) {
      expect(value(await findTender(options()))).toBe(expected);
      await chmod(expected, 0o644);
    }
    expect(failure(await findTender(options())).code).toBe('E_TENDER_MISSING');
  });

  it('takes PATH directories in order and skips files that are not executable', async () => {
    await writeFakeTender(path.join(bin1, 'solo5-spt'), { mode: 0o644 });
    await writeFakeTender(path.join(bin2, 'solo5-spt'));
    expect(value(await findTender(options({ kind: 'spt' })))).toBe(path.join(bin2, 'solo5-spt'));
  });

  it('uses only the explicit tender when one is configured, and a missing one is an error', async () => {
    await writeFakeTender(path.join(stateDir, 'solo5-hvt.2'));
    const mine = path.join(root, 'my-hvt');
    await writeFakeTender(mine);
    expect(value(await findTender(options({ explicit: mine })))).toBe(mine);
    const missing = path.join(root, 'nope');
    expect(failure(await findTender(options({ explicit: missing }))).message).toBe(
      `tender ${missing} does not exist or is not executable`,
    );
  });

  it('names every place it looked, Albatross style, the bundled tender last', async () => {
    await writeFakeTender(bundled);
    expect(
      failure(await findTender(options({ kind: 'spt', abiVersion: 3, bundledSpt: `${stateDir}/none` })))
        .message,
    ).toBe(
      `tender does not exist, looked for ${stateDir}/solo5-spt.3, solo5-spt.3, ${stateDir}/solo5-spt, solo5-spt, ${stateDir}/none`,
    );
    expect(failure(await findTender(options({ bundledHvt: null }))).message).toBe(
      `tender does not exist, looked for ${stateDir}/solo5-hvt.2, solo5-hvt.2, ${stateDir}/solo5-hvt, solo5-hvt`,
    );
  });
});
