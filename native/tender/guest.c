/* guest.c: bounds checks on guest addresses and the boot-time layout of guest
 * memory. Memory arrives zero-filled (a fresh anonymous mapping), so only the
 * non-zero words are written. */
#include "guest.h"

#include <string.h>

#include "args.h"
#include "util.h"

static void check(const struct guest *g, uint64_t gpa, uint64_t size, const char *what)
{
    /* Strictly below mem_size, as solo5 checks: a buffer ending on the last byte
     * of memory is refused. Matching it keeps the same guests valid. */
    if (gpa >= g->mem_size || size > UINT64_MAX - gpa || gpa + size >= g->mem_size)
        die("%s: Invalid guest access: gpa=0x%lx, sz=%lu", what, (unsigned long)gpa,
            (unsigned long)size);
}

void *guest_in(const struct guest *g, uint64_t gpa, uint64_t size, const char *what)
{
    check(g, gpa, size, what);
    return g->mem + gpa;
}

void *guest_out(const struct guest *g, uint64_t gpa, uint64_t size, const char *what)
{
    check(g, gpa, size, what);
    for (unsigned i = 0; i < g->n_ro; i++)
        if (gpa < g->ro[i].end && gpa + size > g->ro[i].start)
            die("%s: Invalid guest access: gpa=0x%lx, sz=%lu", what, (unsigned long)gpa,
                (unsigned long)size);
    return g->mem + gpa;
}

static void put64(struct guest *g, uint64_t gpa, uint64_t v)
{
    memcpy(g->mem + gpa, &v, sizeof v);
}

#define PTE_P 0x1ULL
#define PTE_RW 0x2ULL
#define PTE_PS 0x80ULL
#define MIB2 0x200000ULL

void guest_write_tables(struct guest *g)
{
    /* Null, 64-bit code (execute-only, L=1) and data descriptors: the same
     * values as the hidden segment state set through KVM (§3.5), so a guest
     * reloading 0x08 or 0x10 keeps what it started with. */
    put64(g, GUEST_GDT + 0, 0);
    put64(g, GUEST_GDT + 8, 0x00AF99000000FFFFULL);
    put64(g, GUEST_GDT + 16, 0x00CF93000000FFFFULL);

    const uint64_t pdpt = 0x3000, pd = 0x4000, pt = 0x8000;
    put64(g, GUEST_PML4, pdpt | PTE_P | PTE_RW);
    /* All four directories always, whatever the memory size (§3.4). */
    for (uint64_t i = 0; i < 4; i++)
        put64(g, pdpt + i * 8, (pd + i * 0x1000) | PTE_P | PTE_RW);
    /* The first 2 MiB go through a 4 KiB table so the low 64 KiB can be absent
     * and the tender's window read-only; the rest is 2 MiB pages up to mem_size. */
    put64(g, pd, pt | PTE_P | PTE_RW);
    for (uint64_t k = 1; k < g->mem_size / MIB2; k++)
        put64(g, pd + k * 8, (k * MIB2) | PTE_P | PTE_RW | PTE_PS);
    for (uint64_t i = 0x10; i < 0x200; i++)
        put64(g, pt + i * 8, (i * 0x1000) | PTE_P | (i >= 0x100 ? PTE_RW : 0));
}

void guest_write_boot_info(struct guest *g, uint64_t kernel_end, uint64_t tsc_hz,
                           const struct manifest *m, int argc, char *const argv[])
{
    const uint64_t mft = GUEST_BOOT_INFO + 56;
    const uint64_t cmdline = mft + m->size;
    args_guest_cmdline((char *)g->mem + cmdline, argc, argv);
    memcpy(g->mem + mft, m->raw, m->size);
    /* All 56 bytes, zeros included: host_features = 0 and net_ring = 0 are how
     * this tender declines ring I/O (§3.9). */
    put64(g, GUEST_BOOT_INFO + 0, g->mem_size);
    put64(g, GUEST_BOOT_INFO + 8, kernel_end);
    put64(g, GUEST_BOOT_INFO + 16, tsc_hz);
    put64(g, GUEST_BOOT_INFO + 24, cmdline);
    put64(g, GUEST_BOOT_INFO + 32, mft);
    put64(g, GUEST_BOOT_INFO + 40, 0); /* host_features, guest_features */
    put64(g, GUEST_BOOT_INFO + 48, 0); /* net_ring */
}
