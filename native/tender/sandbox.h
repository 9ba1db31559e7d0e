/* sandbox.h: petrel-hvt's system-call filter, installed once the VM is set up
 * and before the first KVM_RUN (solo5.md §1.8 step 11, §1.12-§1.13). */
#ifndef PETREL_SANDBOX_H
#define PETREL_SANDBOX_H

/* Allows only what the run loop and the hypercall handlers make, each call
 * narrowed to the descriptors and values they use: KVM_RUN and KVM_GET_REGS on
 * the vCPU, console and message writes on 1 and 2, tap reads and writes, block
 * pread/pwrite inside each file's capacity, ppoll on the taps, two clocks,
 * exit_group. Anything else kills the whole process with SIGSYS (status 159).
 * After this the tender must never allocate, assert or abort. */
void sandbox_install(int vcpu_fd);

#endif
