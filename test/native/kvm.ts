// Whether this host can run hvt guests: the bundled kvm-probe opens /dev/kvm read-write and
// gets KVM_GET_API_VERSION answered, as the tender and petreld's probe do (a mere open would
// accept a regular file that happens to sit at /dev/kvm). Tests that need a guest to run are
// gated on this; the others run everywhere.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const probe = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../native/build/kvm-probe');

export const kvmUsable: boolean = spawnSync(probe, ['/dev/kvm'], { stdio: 'ignore' }).status === 0;
