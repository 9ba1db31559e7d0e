/* load.c: loading the image into guest memory with solo5-hvt's rules, in its
 * order, with its messages (solo5.md §3.6). A tender that accepted less would
 * refuse real unikernels; one that accepted more would run images solo5 refuses.
 * solo5-spt loads by the same rules and texts (solo5-spt.md §1.3), so
 * petrel-spt uses this too. */
#include "image.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util.h"

#define PAGE 4096ULL

static _Noreturn void bad(const struct image *img, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void bad(const struct image *img, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    die("%s: invalid executable: %s", img->path, what);
}

/* The host address of guest address a. */
static void *host(const struct load_target *t, uint64_t a)
{
    return (void *)(t->base + (uintptr_t)a);
}

void image_load(const struct image *img, const struct load_target *t, struct loaded *out)
{
    const uint64_t mem_size = t->mem_size;
    const uint64_t e = img->ehdr.e_entry;
    uint64_t e_end = 0, prev_vaddr = 0;

    if (e < GUEST_MIN_LOAD || e >= mem_size)
        die("%s: invalid executable: e_entry does not fall within the memory allocation range "
            "(%lu < %llu || %lu >= %lu)",
            img->path, (unsigned long)e, GUEST_MIN_LOAD, (unsigned long)e, (unsigned long)mem_size);

    out->ro = calloc(img->ehdr.e_phnum, sizeof *out->ro);
    if (out->ro == NULL)
        die_errno("could not allocate segment table");
    out->n_ro = 0;

    for (unsigned i = 0; i < img->ehdr.e_phnum; i++) {
        const Elf64_Phdr *p = &img->phdrs[i];
        /* Empty PT_LOADs (solo5's TLS template at address 0) and .bss-only ones
         * are skipped: the first would fail rule 1, the second relies on guest
         * memory being zero, as in solo5. */
        if (p->p_type != PT_LOAD || p->p_filesz == 0)
            continue;
        const uint64_t v = p->p_vaddr, align = p->p_align;

        if (v < GUEST_MIN_LOAD)
            bad(img, "phdr[%u].p_vaddr outside of valid memory range (%lu < %llu)", i, (unsigned long)v,
                GUEST_MIN_LOAD);
        if (v < prev_vaddr)
            bad(img, "phdr[%u].p_vaddr is not in ascending order", i);
        prev_vaddr = v;
        if (align == 0 || (align & (align - 1)) != 0)
            bad(img, "phdr[%u].p_align is not a power of two", i);
        const uint64_t start = v & ~(align - 1);
        if (start < GUEST_MIN_LOAD || start < e_end)
            bad(img, "phdr[%u].p_vaddr_start is outside of memory range (%lu < %lu (e_end))", i,
                (unsigned long)start, (unsigned long)e_end);
        if (v >= mem_size || p->p_filesz > mem_size - v)
            bad(img, "phdr[%u] program file segment falls outside of valid range", i);
        /* Wraps only for an absurd p_memsz, which the check below refuses anyway. */
        const uint64_t top = v + p->p_memsz;
        const uint64_t end = (top & (align - 1)) ? (top | (align - 1)) + 1 : top;
        if (p->p_memsz < p->p_filesz || p->p_memsz > mem_size - v || end > mem_size)
            bad(img,
                "phdr[%u] program memory segment falls outside of valid range "
                "(%lu (p_vaddr + p_memsz) > %lu (mem_size))",
                i, (unsigned long)(v + p->p_memsz), (unsigned long)mem_size);

        ssize_t n = pread(img->fd, host(t, v), p->p_filesz, (off_t)p->p_offset);
        if (n < 0 || (uint64_t)n != p->p_filesz)
            bad(img, "phdr[%u] could not be read (%zd != %lu)", i, n, (unsigned long)p->p_filesz);
        /* The p_memsz - p_filesz bytes after them are not written: guest memory
         * is a fresh anonymous mapping, zero already, and writing zeros would
         * only commit pages (.bss) the guest may never touch. */

        if ((start & (PAGE - 1)) != 0 || (end & (PAGE - 1)) != 0)
            bad(img, "phdr[%u].p_vaddr_start not aligned with architectural page size (%lu & (%lu - 1))",
                i, (unsigned long)start, (unsigned long)(PAGE - 1));
        /* W^X: a segment both writable and executable would let the guest
         * rewrite its own code; solo5 refuses it and so do we. */
        if ((p->p_flags & PF_W) && (p->p_flags & PF_X))
            bad(img, "phdr[%u] requests WRITE and EXEC permissions", i);
        /* hvt: execute is dropped on the host, because the guest executes
         * through KVM and the tender never runs guest memory; KVM carries
         * read-only into the guest. spt: the guest's code runs on the host, so
         * PF_X stays; nothing else of guest memory is ever executable. */
        int prot = PROT_NONE;
        if (p->p_flags & (PF_R | PF_X))
            prot |= PROT_READ;
        if (p->p_flags & PF_W)
            prot |= PROT_WRITE;
        if (t->host_exec && (p->p_flags & PF_X))
            prot |= PROT_EXEC;
        if (mprotect(host(t, start), end - start, prot) != 0)
            die_errno("%s: could not protect phdr[%u]", img->path, i);
        if (!(prot & PROT_WRITE))
            out->ro[out->n_ro++] = (struct range){start, end};
        e_end = end;
    }
    out->entry = e;
    out->kernel_end = e_end;
}
