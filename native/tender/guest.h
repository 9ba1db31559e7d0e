/* guest.h: guest physical memory as the tender sees it, the checks every
 * guest-supplied address goes through (solo5.md §3.12), and the fixed layout
 * the hvt ABI promises (§3.2-§3.4, §3.7-§3.8). */
#ifndef PETREL_GUEST_H
#define PETREL_GUEST_H

#include <stddef.h>
#include <stdint.h>

#include "image.h"
#include "manifest.h"

#define GUEST_BOOT_INFO 0x10000ULL
#define GUEST_GDT 0x1000ULL
#define GUEST_PML4 0x2000ULL

struct guest {
    uint8_t *mem;
    uint64_t mem_size;
    /* Ranges the loader made read-only on the host (§3.6 step 9). The tender
     * itself must not write there either, or a guest could make it fault. */
    struct range *ro;
    unsigned n_ro;
};

/* A guest buffer (gpa, size) the tender will read; exits 1 with
 * "<what>: Invalid guest access: gpa=0x..., sz=..." unless gpa + size < mem_size. */
void *guest_in(const struct guest *g, uint64_t gpa, uint64_t size, const char *what);
/* The same for a buffer the tender will write; also refuses host-read-only memory. */
void *guest_out(const struct guest *g, uint64_t gpa, uint64_t size, const char *what);

/* §3.3, §3.4: GDT at 0x1000, page tables at 0x2000-0x8FFF. */
void guest_write_tables(struct guest *g);

/* §3.7, §3.8: boot information, manifest copy and joined command line.
 * Exits 1 if the arguments do not fit in 8191 characters. */
void guest_write_boot_info(struct guest *g, uint64_t kernel_end, uint64_t tsc_hz,
                           const struct manifest *m, int argc, char *const argv[]);

#endif
