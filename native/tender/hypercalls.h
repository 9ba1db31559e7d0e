/* hypercalls.h: the hvt hypercall table (solo5.md §3.10-§3.11). The guest
 * writes the guest-physical address of an argument structure to port
 * 0x500 + n; the handler for n reads and writes that structure. */
#ifndef PETREL_HYPERCALLS_H
#define PETREL_HYPERCALLS_H

#include <stdint.h>

#include "guest.h"

enum {
    HC_WALLTIME = 1,
    HC_PUTS = 2,
    HC_POLL = 3,
    HC_BLOCK_WRITE = 4,
    HC_BLOCK_READ = 5,
    HC_NET_WRITE = 6,
    HC_NET_READ = 7,
    HC_HALT = 8,
    HC_MAX = 8,
};

#define HC_PORT_BASE 0x500

/* solo5 results in the "ret" field of an argument structure. */
#define SOLO5_R_OK 0
#define SOLO5_R_AGAIN 1
#define SOLO5_R_EINVAL 2

typedef void (*hypercall_fn)(const struct guest *g, uint64_t gpa);

/* Modules register only when they have a device: a BLOCK_* or NET_* call
 * without one is fatal, as in solo5 (§3.10). */
void hypercall_register(unsigned n, hypercall_fn fn);
void hypercalls_init(void);

/* Serve hypercall n (1 ... 7) at gpa; exits 1 for an unregistered number. */
void hypercall(const struct guest *g, unsigned n, uint64_t gpa);

/* HALT: checks the structure and the cookie, returns the exit status & 0xff. */
int hypercall_halt(const struct guest *g, uint64_t gpa);

#endif
