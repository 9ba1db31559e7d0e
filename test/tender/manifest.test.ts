import { deflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import type { ManifestDevice } from '../../src/tender/elf.js';
import { imageDigest, inflateImage } from '../../src/tender/image.js';
import { checkManifestDevices } from '../../src/tender/manifest.js';

const manifest: ManifestDevice[] = [
  { name: 'service', type: 'NET_BASIC' },
  { name: 'storage', type: 'BLOCK_BASIC' },
  { name: 'management', type: 'NET_BASIC' },
];
const listed = 'net "service", block "storage", net "management"';

describe('manifest against configured devices (semantics §10.3)', () => {
  it('accepts exactly the manifest devices, in any order', () => {
    expect(checkManifestDevices(manifest, { blocks: ['storage'], nets: ['management', 'service'] }).ok).toBe(
      true,
    );
    expect(checkManifestDevices([], { blocks: [], nets: [] }).ok).toBe(true);
  });

  it('refuses a missing or extra block device with the Albatross text', () => {
    for (const blocks of [[], ['storage', 'other'], ['Storage']]) {
      const result = checkManifestDevices(manifest, { blocks, nets: ['service', 'management'] });
      expect(!result.ok && result.error.message).toBe(
        `specified block device(s) does not match with manifest. Devices present in manifest: ${listed}`,
      );
    }
  });

  it('refuses a missing or extra network with the Albatross text', () => {
    for (const nets of [['service'], ['service', 'management', 'x']]) {
      const result = checkManifestDevices(manifest, { blocks: ['storage'], nets });
      expect(!result.ok && result.error.message).toBe(
        `specified bridge(s) does not match with the manifest. Devices present in manifest: ${listed}`,
      );
    }
  });

  it('does not take a block device for a network of the same name', () => {
    const result = checkManifestDevices([{ name: 'x', type: 'BLOCK_BASIC' }], { blocks: [], nets: ['x'] });
    expect(!result.ok && result.error.code).toBe('E_MANIFEST_BLOCK');
  });
});

describe('image inflation', () => {
  const image = Buffer.from('\x7fELF and the rest of an image'.repeat(100));

  it('inflates a zlib image and passes an uncompressed one through', async () => {
    expect(await inflateImage(deflateSync(image), true)).toEqual({ ok: true, value: image });
    expect(await inflateImage(image, false)).toEqual({ ok: true, value: image });
  });

  it('refuses data that is not zlib with `failed to uncompress:`', async () => {
    const result = await inflateImage(image, true);
    expect(!result.ok && result.error.message).toMatch(/^failed to uncompress: /);
  });

  it('refuses an image that inflates beyond the cap', async () => {
    const result = await inflateImage(deflateSync(Buffer.alloc(1 << 20)), true, { maxBytes: 1000 });
    expect(!result.ok && result.error.code).toBe('E_IMAGE_INFLATE');
  });

  it('digests the inflated bytes with SHA-256', () => {
    expect(imageDigest(Buffer.from(''))).toBe(
      'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
    );
  });
});
