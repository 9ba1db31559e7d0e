/* memory.c: the size of guest memory and its one mapping at a fixed address. */
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

/* The start of the tender's own image (a static PIE, placed by the kernel). */
extern char __executable_start[];

uint64_t memory_size(int64_t mib)
{
    const uint64_t mem_size = (uint64_t)mib << 20;
    /* The lowest of the tender's own mappings: its image, or its heap, which
     * the kernel places apart from a static PIE's image. */
    uint64_t own = (uint64_t)(uintptr_t)__executable_start;
    const uint64_t brk = (uint64_t)(uintptr_t)sbrk(0);
    if (brk != (uint64_t)-1 && brk < own)
        own = brk;
    if (mem_size - 1 >= own) {
        warn_msg("Assertion failed: guest memory [0x%llx, 0x%llx) must end below the tender's own "
                 "mappings at 0x%llx (--mem=%lld)",
                 SPT_MEM_BASE, (unsigned long long)mem_size, (unsigned long long)own, (long long)mib);
        abort();
    }
    return mem_size;
}

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

void memory_map(uint64_t mem_size, bool exec)
{
    const size_t size = mem_size - SPT_MEM_BASE;
    /* Private, and without MAP_NORESERVE, as solo5-spt: the kernel's
     * overcommit policy decides what size is too large. Pages are committed
     * as the guest touches them. The mapping must not replace anything of
     * the tender's own (solo5-spt's MAP_FIXED would, silently). */
    const int prot = PROT_READ | PROT_WRITE | (exec ? PROT_EXEC : 0);
    void *p = mmap((void *)SPT_MEM_BASE, size, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == MAP_FAILED) {
        char buf[32];
        if (errno == EPERM || errno == EACCES)
            die("Error allocating guest memory: %s (the kernel forbids mappings below vm.mmap_min_addr = %s; "
                "petrel-spt needs 0x%llx: sysctl -w vm.mmap_min_addr=%llu)",
                strerror(errno), mmap_min_addr(buf, sizeof buf), SPT_MEM_BASE, SPT_MEM_BASE);
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
