import { describe, expect, it } from 'vitest';
import type { ManifestDevice } from '../../src/tender/elf.js';
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
