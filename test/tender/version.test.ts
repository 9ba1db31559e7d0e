import { readFile, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkTenderAbi, parseVersionOutput, TenderVersionCache } from '../../src/tender/version.js';
import { failure, tempDirEachTest, value } from '../host/helpers.js';
import { writeFakeTender } from './fake-tender.js';

let dir: string;
tempDirEachTest((made) => {
  dir = made;
});

async function runs(counter: string): Promise<number> {
  try {
    return (await readFile(counter, 'utf8')).split('\n').filter((l) => l !== '').length;
  } catch {
    return 0;
  }
}

describe('tender --version', () => {
  it('reads the exact `ABI version N` line only', () => {
    const real = 'solo5-hvt tender, version v0.12.1-7-g469c1a8\nABI version 2\n';
    expect(parseVersionOutput(real)).toMatchObject({
      abiVersion: 2,
      banner: 'solo5-hvt tender, version v0.12.1-7-g469c1a8',
    });
    for (const text of ['ABI version 2 \n', 'ABI  version 2\n', 'abi version 2\n', 'ABI version two\n', '']) {
      expect(parseVersionOutput(text).abiVersion).toBeNull();
    }
  });

  it('checks the ABI line against the image, with the Albatross text on a mismatch', async () => {
    const tender = path.join(dir, 'solo5-hvt');
    await writeFakeTender(tender, { abi: '3' });
    expect(value(await checkTenderAbi(tender, 3)).abiVersion).toBe(3);
    expect(failure(await checkTenderAbi(tender, 2)).message).toBe(
      "unexpected solo5 tender --version output, expected one line with 'ABI version 2', got " +
        'solo5-hvt tender, version v0.12.1\nABI version 3',
    );
  });

  it('reports a tender that fails to answer with its stderr', async () => {
    const tender = path.join(dir, 'broken');
    await writeFile(tender, '#!/bin/sh\necho "broken: no" >&2\nexit 3\n', { mode: 0o755 });
    expect(failure(await checkTenderAbi(tender, 2)).message).toBe(`${tender} --version failed: broken: no`);
  });

  it('caches by file identity: a hit runs nothing, a new mtime or content runs again', async () => {
    const tender = path.join(dir, 'solo5-hvt');
    const counter = path.join(dir, 'runs');
    await writeFakeTender(tender, { counter });
    const cache = new TenderVersionCache();
    expect(value(await cache.get(tender)).abiVersion).toBe(2);
    expect(value(await cache.get(tender)).abiVersion).toBe(2);
    expect(await runs(counter)).toBe(1);

    await utimes(tender, new Date(), new Date(Date.now() + 5_000));
    expect(value(await cache.get(tender)).abiVersion).toBe(2);
    expect(await runs(counter)).toBe(2);

    await writeFakeTender(tender, { counter, abi: '7' });
    await utimes(tender, new Date(0), new Date(0)); // same mtime as ever is no excuse: size differs
    expect(value(await cache.get(tender)).abiVersion).toBe(7);
    expect(await runs(counter)).toBe(3);
    expect(value(await checkTenderAbi(tender, 7, cache)).abiVersion).toBe(7);
    expect(await runs(counter)).toBe(3);
  });
});
