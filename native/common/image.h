/* image.h: the unikernel ELF file: its header, program headers, Solo5 notes
 * (solo5.md §2) and, once guest memory exists, its loading (§3.6). */
#ifndef PETREL_IMAGE_H
#define PETREL_IMAGE_H

#include <elf.h>
#include <stdint.h>

#include "guest.h"
#include "manifest.h"

#define HVT_ABI_TARGET 1
#define HVT_ABI_VERSION 2

struct image {
    const char *path; /* exactly as given: messages name it so (§ conventions) */
    int fd;
    Elf64_Ehdr ehdr;
    Elf64_Phdr *phdrs;
    struct manifest mft;
};

/* Steps 2 of §1.8: open, check the ELF header, the ABI note and the manifest.
 * Every failure exits 1 with solo5's text. */
void image_open(struct image *img, const char *path);

/* Step 7: copy the segments into guest memory and protect them on the host.
 * Sets *entry and *kernel_end; records read-only ranges in g. */
void image_load(const struct image *img, struct guest *g, uint64_t *entry, uint64_t *kernel_end);

#endif
