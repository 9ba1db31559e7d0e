/* memory.c: mapping guest memory at its fixed address and protecting it. */
#include "memory.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "abi.h"
#include "image.h"
#include "util.h"

_Static_assert(SPT_LOAD_MIN == GUEST_MIN_LOAD, "the shared loader and the spt ABI agree on the image's lowest address");

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

/* The sysctl as text, for the message; "unknown" if it cannot be read. */
static const char *mmap_min_addr(char *buf, size_t size)
{
    int fd = open("/proc/sys/vm/mmap_min_addr", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : read(fd, buf, size - 1);
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return "unknown";
    buf[n] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    return buf;
}

void memory_map(uint64_t mem_size)
{
    if (mem_size <= SPT_MEM_BASE)
        die("Error allocating guest memory: %llu bytes is below the guest's base address 0x%llx",
            (unsigned long long)mem_size, SPT_MEM_BASE);
    const size_t size = mem_size - SPT_MEM_BASE;
    /* Private: nobody else needs to see guest memory (unlike hvt, where KVM
     * does). No reserve: only what the guest touches is committed. The mapping
     * must not replace anything of the tender's own. */
    void *p = mmap((void *)SPT_MEM_BASE, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == MAP_FAILED) {
        char buf[32];
        if (errno == EPERM || errno == EACCES)
            die("Could not map guest memory at 0x%llx: the kernel forbids mappings below "
                "vm.mmap_min_addr = %s; petrel-spt needs it at most %llu (sysctl -w vm.mmap_min_addr=%llu)",
                SPT_MEM_BASE, mmap_min_addr(buf, sizeof buf), SPT_MEM_BASE, SPT_MEM_BASE);
        if (errno == EEXIST)
            die("Error allocating guest memory: 0x%llx - 0x%llx overlaps the tender's own mappings "
                "(--mem too large)",
                SPT_MEM_BASE, (unsigned long long)mem_size);
        die_errno("Error allocating guest memory");
    }
    /* Kernels before 4.17 take the flag as a mere hint. */
    if (p != (void *)SPT_MEM_BASE) {
        munmap(p, size);
        die("Error allocating guest memory: the kernel would not map it at 0x%llx", SPT_MEM_BASE);
    }
}

static void protect(uint64_t start, uint64_t end, int prot)
{
    if (end > start && mprotect((void *)start, end - start, prot) != 0)
        die_errno("Could not protect guest memory 0x%llx - 0x%llx", (unsigned long long)start,
                  (unsigned long long)end);
}

void memory_protect(uint64_t kernel_end, uint64_t mem_size, bool exec_heap)
{
    protect(SPT_MEM_BASE, SPT_BOOT_INFO, PROT_NONE);
    protect(SPT_BOOT_INFO, SPT_LOAD_MIN, PROT_READ);
    /* The loader protected each segment with file data; what lies above the
     * last of them (.bss, heap, stack) stays read-write. */
    if (exec_heap)
        protect(kernel_end, mem_size, PROT_READ | PROT_WRITE | PROT_EXEC);
}
