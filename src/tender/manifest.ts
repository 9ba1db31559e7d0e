// The device check of semantics §10.3: a configuration's block devices and networks must be
// exactly the manifest's BLOCK_BASIC and NET_BASIC devices, with Albatross' reply texts.

import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import type { ManifestDevice } from './elf.js';

export interface ConfiguredDevices {
  /** Unikernel-side block device names (`block-name`). */
  readonly blocks: readonly string[];
  /** Unikernel-side network names (`netif`). */
  readonly nets: readonly string[];
}

export type ManifestMismatch = PetrelError<'E_MANIFEST_BLOCK' | 'E_MANIFEST_NET'>;

function sameSet(a: readonly string[], b: readonly string[]): boolean {
  const left = new Set(a);
  const right = new Set(b);
  return left.size === right.size && [...left].every((x) => right.has(x));
}

/** The manifest's devices as the error texts list them: `block "x", net "y"`, manifest order. */
export function describeDevices(devices: readonly ManifestDevice[]): string {
  return devices
    .map((d) => `${d.type === 'BLOCK_BASIC' ? 'block' : 'net'} ${JSON.stringify(d.name)}`)
    .join(', ');
}

/** Checks block devices first, then networks; names are compared exactly (case-sensitive). */
export function checkManifestDevices(
  devices: readonly ManifestDevice[],
  configured: ConfiguredDevices,
): Result<void, ManifestMismatch> {
  const of = (type: ManifestDevice['type']) => devices.filter((d) => d.type === type).map((d) => d.name);
  const listed = describeDevices(devices);
  const facts = { manifest: devices, configured };
  if (!sameSet(of('BLOCK_BASIC'), configured.blocks)) {
    return err(
      'E_MANIFEST_BLOCK',
      `specified block device(s) does not match with manifest. Devices present in manifest: ${listed}`,
      facts,
    );
  }
  if (!sameSet(of('NET_BASIC'), configured.nets)) {
    return err(
      'E_MANIFEST_NET',
      `specified bridge(s) does not match with the manifest. Devices present in manifest: ${listed}`,
      facts,
    );
  }
  return ok(undefined);
}
