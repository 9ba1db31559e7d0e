// Whether this host can run hvt guests: /dev/kvm opened read-write, as the tender opens it.
// Tests that need a guest to run are gated on this; the others run everywhere.
import { closeSync, openSync } from 'node:fs';

function canOpenKvm(): boolean {
  try {
    closeSync(openSync('/dev/kvm', 'r+'));
    return true;
  } catch {
    return false;
  }
}

export const kvmUsable: boolean = canOpenKvm();
