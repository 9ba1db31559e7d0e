/* memory.h: guest memory of petrel-spt: one private anonymous mapping at the
 * fixed address SPT_MEM_BASE, in the tender's own address space, so that guest
 * addresses are host addresses (solo5-spt.md §2.1, §2.2). */
#ifndef PETREL_SPT_MEMORY_H
#define PETREL_SPT_MEMORY_H

#include <stdbool.h>
#include <stdint.h>

/* --mem MiB to bytes, as solo5-spt: no rounding, no fixed maximum; but guest
 * memory must end below the tender's own mappings, or the tender aborts
 * (SIGABRT, status 134), as solo5-spt's assertion does. A negative size wraps
 * to a huge one and aborts the same way. */
uint64_t memory_size(int64_t mib);

/* Maps [SPT_MEM_BASE, mem_size) read-write (and executable with
 * --x-exec-heap), zero-filled, committed lazily. Exits 1 with "Error
 * allocating guest memory: ..." when the kernel refuses. The loader then
 * protects the image's segments; everything else stays as mapped. */
void memory_map(uint64_t mem_size, bool exec);

#endif
