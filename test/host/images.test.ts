// The content-addressed image store: staging (inflate, digest, fsync), one file per image,
// removal, the digest check on reading, start-up cleaning, and the per-unikernel link.
import { createHash } from 'node:crypto';
import { chmod, lstat, mkdir, open, readdir, readFile, readlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { deflateSync } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isTemporaryFileName } from '../../src/host/files.js';
import {
  cleanStore,
  commitImage,
  discardStaged,
  imagesDir,
  linkImage,
  openImage,
  readImageFrom,
  removeImage,
  type StageOptions,
  stageImage,
  storedImagePath,
  verifyImage,
} from '../../src/host/images.js';
import { failure, name, tempDir, value } from './helpers.js';

let dir: string;
let cleanup: () => Promise<void>;
beforeEach(async () => {
  ({ dir, cleanup } = await tempDir());
  await mkdir(imagesDir(dir));
});
afterEach(async () => {
  await cleanup();
});

const RAW: StageOptions = { compressed: false, maxBytes: 1 << 20, maxInflated: 1 << 20 };
const ZLIB: StageOptions = { ...RAW, compressed: true };
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const image = Buffer.from('\x7fELF and the rest of an image'.repeat(100));

async function* pieces(bytes: Uint8Array, size: number) {
  for (let at = 0; at < bytes.length; at += size) yield bytes.subarray(at, at + size);
}

describe('staging', () => {
  it('digests and writes a raw image to a temporary file start-up would remove, read-only', async () => {
    const staged = value(await stageImage(dir, pieces(image, 7), RAW));
    expect(staged).toMatchObject({ digest: sha256(image), size: image.length });
    expect(isTemporaryFileName(path.basename(staged.file))).toBe(true);
    expect(path.dirname(staged.file)).toBe(imagesDir(dir));
    expect(await readFile(staged.file)).toEqual(image);
    expect((await lstat(staged.file)).mode & 0o777).toBe(0o444);
    await discardStaged(staged);
    expect(await readdir(imagesDir(dir))).toEqual([]);
  });

  it('inflates a zlib image as it arrives; the digest is of the inflated bytes', async () => {
    const staged = value(await stageImage(dir, pieces(deflateSync(image), 5), ZLIB));
    expect(staged).toMatchObject({ digest: sha256(image), size: image.length });
    expect(await readFile(staged.file)).toEqual(image);
  });

  it('the empty image has the digest of nothing', async () => {
    expect(value(await stageImage(dir, [new Uint8Array(0)], RAW)).digest).toBe(
      'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
    );
  });

  it.each([
    ['data that is not zlib', [image], ZLIB, 'E_IMAGE_INFLATE', /^failed to uncompress: /],
    [
      'an image that inflates beyond the cap',
      [deflateSync(Buffer.alloc(1 << 20))],
      { ...ZLIB, maxInflated: 1000 },
      'E_IMAGE_INFLATE',
      /^failed to uncompress: the image inflates to more than 1000 bytes$/,
    ],
    [
      'more bytes than the frame limit',
      [image],
      { ...RAW, maxBytes: 100 },
      'E_IMAGE_TOO_LARGE',
      /^image exceeds the limit of 100 bytes$/,
    ],
  ] as const)('refuses %s and leaves nothing behind', async (_what, input, options, code, message) => {
    const error = failure(await stageImage(dir, input, options));
    expect(error.code).toBe(code);
    expect(error.message).toMatch(message);
    expect(await readdir(imagesDir(dir))).toEqual([]);
  });

  it('a stream that breaks (the client went away) is refused and leaves nothing behind', async () => {
    async function* broken() {
      yield image.subarray(0, 10);
      throw new Error('connection closed inside a stream');
    }
    for (const options of [RAW, ZLIB]) {
      const error = failure(await stageImage(dir, broken(), options));
      expect(error.message).toBe('receiving the image failed: connection closed inside a stream');
      expect(await readdir(imagesDir(dir))).toEqual([]);
    }
  });
});

describe('the store', () => {
  it('one file per image, however often it is stored; removal takes it away', async () => {
    for (let i = 0; i < 3; i++) {
      const staged = value(await stageImage(dir, [image], RAW));
      expect(value(await commitImage(dir, staged))).toBe(storedImagePath(dir, sha256(image)));
    }
    expect(await readdir(imagesDir(dir))).toEqual([sha256(image)]);
    value(await removeImage(dir, sha256(image)));
    expect(await readdir(imagesDir(dir))).toEqual([]);
    value(await removeImage(dir, sha256(image)));
  });

  it('storing an image again keeps the stored file: a jail being made may have it open', async () => {
    // petrel-jail opens the image, then binds it from that descriptor; the kernel refuses to
    // bind a file no longer linked (ENOENT), so a new copy renamed over it failed that jail.
    value(await commitImage(dir, value(await stageImage(dir, [image], RAW))));
    const file = storedImagePath(dir, sha256(image));
    const opened = await open(file, 'r');
    try {
      value(await commitImage(dir, value(await stageImage(dir, [image], RAW))));
      const held = await opened.stat();
      expect(held.nlink).toBe(1);
      expect((await lstat(file)).ino).toBe(held.ino);
    } finally {
      await opened.close();
    }
    expect(await readdir(imagesDir(dir))).toEqual([sha256(image)]);
  });

  it('a stored copy of another size (damaged) is replaced by the new one', async () => {
    const file = storedImagePath(dir, sha256(image));
    await writeFile(file, 'truncated');
    value(await commitImage(dir, value(await stageImage(dir, [image], RAW))));
    expect(await readFile(file)).toEqual(image);
    expect(await readdir(imagesDir(dir))).toEqual([sha256(image)]);
  });

  it('reading an image checks its size; verifying it checks its digest', async () => {
    const ref = { digest: sha256(image), size: image.length };
    value(await commitImage(dir, value(await stageImage(dir, [image], RAW))));
    const handle = value(await openImage(dir, ref));
    const read: Buffer[] = [];
    for await (const piece of readImageFrom(handle, 100)) read.push(piece);
    await handle.close();
    expect(Buffer.concat(read)).toEqual(image);
    value(await verifyImage(dir, ref));

    expect(failure(await openImage(dir, { ...ref, size: 1 })).code).toBe('E_IMAGE_CORRUPT');
    const file = storedImagePath(dir, ref.digest);
    await chmod(file, 0o600);
    const damaged = Buffer.from(image);
    damaged[100] = 0;
    await writeFile(file, damaged);
    expect(failure(await verifyImage(dir, ref)).message).toBe(
      `image ${ref.digest} in the store is damaged (its SHA-256 is now ${sha256(damaged)})`,
    );
    value(await removeImage(dir, ref.digest));
    expect(failure(await verifyImage(dir, ref)).code).toBe('E_IMAGE_MISSING');
  });

  it('start-up cleaning: temporaries and unreferenced images go, missing ones are reported', async () => {
    const a = Buffer.from('image a');
    const b = Buffer.from('image b');
    for (const bytes of [a, b]) value(await commitImage(dir, value(await stageImage(dir, [bytes], RAW))));
    await stageImage(dir, [Buffer.from('a staged image nobody took')], RAW);
    await writeFile(path.join(imagesDir(dir), 'README'), 'not ours: left alone');
    const wrongSize = sha256(Buffer.from('c'));
    const referenced = new Map([
      [sha256(a), a.length],
      [sha256(Buffer.from('never stored')), 12],
      [wrongSize, 99],
    ]);
    await writeFile(storedImagePath(dir, wrongSize), 'c');
    const cleaned = value(await cleanStore(dir, referenced));
    expect(cleaned.removed).toHaveLength(2);
    expect((await readdir(imagesDir(dir))).sort()).toEqual(['README', sha256(a), wrongSize].sort());
    expect(cleaned.missing.map((m) => m.digest).sort()).toEqual(
      [sha256(Buffer.from('never stored')), wrongSize].sort(),
    );
    expect(cleaned.missing.find((m) => m.digest === wrongSize)?.reason).toBe(
      `image ${wrongSize} in the store has 1 bytes, not 99`,
    );
  });

  it('makes the store root’s alone, and gives images an older release stored 0400 the jails’ 0444', async () => {
    const digest = sha256(image);
    value(await commitImage(dir, value(await stageImage(dir, [image], RAW))));
    await chmod(storedImagePath(dir, digest), 0o400);
    await chmod(imagesDir(dir), 0o755);
    value(await cleanStore(dir, new Map([[digest, image.length]])));
    expect((await lstat(imagesDir(dir))).mode & 0o777).toBe(0o700);
    expect((await lstat(storedImagePath(dir, digest))).mode & 0o777).toBe(0o444);
  });
});

describe('the link of a unikernel', () => {
  it('<run-dir>/<name>.img links to the stored image; undo removes the link only', async () => {
    const runDir = path.join(dir, 'run');
    await mkdir(runDir);
    const digest = sha256(image);
    value(await commitImage(dir, value(await stageImage(dir, [image], RAW))));
    const link = value(await linkImage(runDir, dir, name('user:web'), digest));
    expect(link.value).toBe(path.join(runDir, 'user:web.img'));
    expect(await readlink(link.value)).toBe(storedImagePath(dir, digest));
    expect(await readFile(link.value)).toEqual(image);
    await link.undo();
    expect(await readdir(runDir)).toEqual([]);
    expect(await readdir(imagesDir(dir))).toEqual([digest]);
    expect(failure(await linkImage(runDir, dir, name('user:'), digest)).code).toBe('E_HOST_PATH');
  });
});
