/* abi.h: Petrel's spt boot ABI (native/spt/ABI.md), the one header both sides
 * include: petrel-spt, which builds this state, and the canary's spt platform
 * layer, which reads it. Freestanding: fixed-width types only. */
#ifndef PETREL_SPT_ABI_H
#define PETREL_SPT_ABI_H

#include <stdint.h>

/* The ABI note an image for petrel-spt carries: target spt, and a version no
 * solo5 release uses, so that solo5-spt refuses Petrel's images and
 * petrel-spt refuses solo5's (ABI.md, "Version"). */
#define SPT_ABI_TARGET 2
#define SPT_ABI_VERSION 1001

/* Guest addresses are host addresses: the guest runs in the tender's own
 * address space. Guest memory is [SPT_MEM_BASE, mem_size). */
#define SPT_MEM_BASE 0x10000ULL  /* first page: never accessible */
#define SPT_BOOT_INFO 0x11000ULL /* boot information, manifest copy, command line: read-only */
#define SPT_LOAD_MIN 0x100000ULL /* lowest address of the image */
#define SPT_CMDLINE_SIZE 8192    /* including the NUL */

/* epoll data of the timer descriptor; a network device's is its manifest index. */
#define SPT_TIMER_TOKEN 0xffffffffffffffffULL

/* At SPT_BOOT_INFO; RDI points here at entry. */
struct spt_boot_info {
    uint64_t mem_size;   /* guest memory ends here (exclusive); the stack starts below it */
    uint64_t kernel_end; /* end of the last loaded segment with file data, page-aligned */
    uint64_t cmdline;    /* address of the NUL-terminated command line */
    uint64_t mft;        /* address of the manifest copy; each attached device's
                            host descriptor is in its entry's host-private word */
    uint64_t start_ns;   /* CLOCK_MONOTONIC when the tender started */
    int32_t epoll_fd;    /* every attached network device, and the timer */
    int32_t timer_fd;    /* CLOCK_MONOTONIC timerfd, for POLL timeouts */
};

#define SPT_BOOT_INFO_SIZE 48
_Static_assert(sizeof(struct spt_boot_info) == SPT_BOOT_INFO_SIZE, "spt boot info is 48 bytes");

#endif
