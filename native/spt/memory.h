/* memory.h: guest memory of petrel-spt: one private anonymous mapping at the
 * fixed address SPT_MEM_BASE, in the tender's own address space, so that guest
 * addresses are host addresses (ABI.md, "Address space"). */
#ifndef PETREL_SPT_MEMORY_H
#define PETREL_SPT_MEMORY_H

#include <stdbool.h>
#include <stdint.h>

/* Maps [SPT_MEM_BASE, mem_size) read-write, zero-filled, committed lazily.
 * Exits 1 when the address is forbidden (vm.mmap_min_addr) or taken. */
void memory_map(uint64_t mem_size);

/* After loading and writing the boot window: the first page inaccessible,
 * the boot window read-only, heap and stack (everything the image does not
 * cover) read-write, and executable only with --x-exec-heap. */
void memory_protect(uint64_t kernel_end, uint64_t mem_size, bool exec_heap);

#endif
