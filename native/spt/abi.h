/* abi.h: solo5's spt boot ABI, version 2 (../../shared/spec/solo5-spt.md
 * §2), the one header both sides include: petrel-spt, which builds this state,
 * and the canary's spt platform layer, which reads it. Written from the spec,
 * not from solo5's headers. Freestanding: fixed-width types only. */
#ifndef PETREL_SPT_ABI_H
#define PETREL_SPT_ABI_H

#include <stdint.h>

/* The ABI note of an spt image (§1.2): target spt, version 2. */
#define SPT_ABI_TARGET 2
#define SPT_ABI_VERSION 2

/* Guest addresses are host addresses: the guest runs in the tender's own
 * address space. Guest memory is [SPT_MEM_BASE, mem_size), all of it
 * read-write plain memory except the image's segments (§2.1, §2.4). */
#define SPT_MEM_BASE 0x10000ULL  /* 0 ... 0xFFFF is never mapped */
#define SPT_BOOT_INFO 0x11000ULL /* boot information, then the manifest copy, then the command line */
#define SPT_LOAD_MIN 0x100000ULL /* lowest address of the image */
#define SPT_CMDLINE_SIZE 8192    /* including the NUL */

/* epoll data of the timer descriptor; a network device's is its manifest index (§3.5). */
#define SPT_TIMER_TOKEN 0xfffffffeULL

/* At SPT_BOOT_INFO; RDI points here at entry (§2.5). Natural alignment, no padding. */
struct spt_boot_info {
    uint64_t mem_size;   /* guest memory ends here (exclusive); the stack starts below it */
    uint64_t kernel_end; /* end of the last segment with file data, page-aligned */
    uint64_t cmdline;    /* address of the NUL-terminated command line */
    uint64_t mft;        /* address of the manifest copy; each attached device's
                            host descriptor is in its entry's hostfd (int32 at 88) */
    int32_t epoll_fd;    /* every attached network device, and the timer */
    int32_t timer_fd;    /* CLOCK_MONOTONIC timerfd, non-blocking */
};

#define SPT_BOOT_INFO_SIZE 40
_Static_assert(sizeof(struct spt_boot_info) == SPT_BOOT_INFO_SIZE, "spt boot info is 40 bytes");

#endif
