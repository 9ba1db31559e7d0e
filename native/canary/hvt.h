/* hvt.h: the guest side of the solo5 hvt ABI, version 2 (solo5.md §3): the
 * boot information, the hypercall structures, and the one instruction that
 * makes a hypercall. Written from the spec, not from solo5's headers. */
#ifndef CANARY_HVT_H
#define CANARY_HVT_H

#include <stdint.h>

struct hvt_boot_info {
    uint64_t mem_size;
    uint64_t kernel_end;
    uint64_t cpu_cycle_freq;
    uint64_t cmdline;
    uint64_t mft;
    uint32_t host_features;
    uint32_t guest_features;
    uint64_t net_ring;
};
_Static_assert(sizeof(struct hvt_boot_info) == 56, "boot info is 56 bytes");

/* What the tender passed in RDI (hvt.c). */
extern const struct hvt_boot_info *boot;

/* hvt-regs.c */
_Noreturn void mode_regs(int argc, char **argv);

enum {
    HVT_WALLTIME = 1,
    HVT_PUTS = 2,
    HVT_POLL = 3,
    HVT_BLOCK_WRITE = 4,
    HVT_BLOCK_READ = 5,
    HVT_NET_WRITE = 6,
    HVT_NET_READ = 7,
    HVT_HALT = 8,
};

struct hvt_walltime { uint64_t nsecs; };
struct hvt_puts { uint64_t data, len; };
struct hvt_poll { uint64_t timeout_nsecs, ready_set; int32_t ret; };
struct hvt_block { uint64_t handle, offset, data, len; int32_t ret; };
struct hvt_net { uint64_t handle, data, len; int32_t ret; };
struct hvt_halt { uint64_t cookie; int32_t exit_status; };

/* A 32-bit OUT of the structure's guest-physical address (identity-mapped, so
 * its pointer) to port 0x500 + n. The memory clobber makes the compiler store
 * the structure before and reload it after. */
static inline void hvt_call(unsigned n, volatile void *arg)
{
    __asm__ __volatile__("outl %0, %1"
                         :
                         : "a"((uint32_t)(uintptr_t)arg), "d"((uint16_t)(0x500 + n))
                         : "memory");
}

/* The raw form, for handing the tender an address on purpose (oob mode). */
static inline void hvt_call_addr(unsigned n, uint64_t gpa)
{
    __asm__ __volatile__("outl %0, %1" : : "a"((uint32_t)gpa), "d"((uint16_t)(0x500 + n)) : "memory");
}

#endif
