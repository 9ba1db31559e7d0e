/* kvm.h: the VM and its one vCPU, set up in solo5-hvt's order with its error
 * texts (solo5.md §3.16), and the run loop (§3.17). */
#ifndef PETREL_KVM_H
#define PETREL_KVM_H

#include <linux/kvm.h>
#include <stdint.h>

#include "guest.h"

struct vm {
    int kvm, fd, vcpu;
    struct kvm_run *run;
};

/* Steps 1-9: /dev/kvm, VM, vCPU, run structure, guest memory (zero-filled,
 * shared, read-write) registered as slot 0. Fills g->mem. */
void vm_create(struct vm *vm, struct guest *g);

/* Steps 12-15: CPUID, special registers, TSC frequency, general registers
 * (§3.5). Returns the TSC frequency in Hz for the boot information. */
uint64_t vm_setup_vcpu(struct vm *vm, uint64_t entry, uint64_t mem_size);

/* Step 19: run until HALT; returns the guest's exit status & 0xff. Every
 * other way out of the guest exits the tender with status 1. */
int vm_run(struct vm *vm, const struct guest *g);

#endif
