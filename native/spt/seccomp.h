/* seccomp.h: the system calls a guest may make (ABI.md, "System calls"). */
#ifndef PETREL_SPT_SECCOMP_H
#define PETREL_SPT_SECCOMP_H

#include "boot.h"

/* Installs the allow-list, with per-argument checks against the attached
 * devices and the tender's own descriptors. Anything else kills the whole
 * process with SIGSYS. After this the tender makes no system call but
 * arch_prctl(ARCH_SET_FS) on its way into the guest. */
void seccomp_install(const struct poll_fds *p);

#endif
