/* image.h: the unikernel ELF file: its header, program headers, Solo5 notes
 * (solo5.md §2) and, once guest memory exists, its loading (§3.6). Shared by
 * petrel-hvt and petrel-spt: both accept images by solo5-hvt's rules and
 * differ only in the target, the ABI version and where the segments go. */
#ifndef PETREL_IMAGE_H
#define PETREL_IMAGE_H

#include <elf.h>
#include <stdbool.h>
#include <stdint.h>

#include "manifest.h"

#define GUEST_MIN_LOAD 0x100000ULL

/* What the image must declare in its ABI note (§2.2), and the tender named in
 * the refusal ("Executable is not for the solo5-hvt target"). */
struct abi {
    uint32_t target;
    uint32_t version;
    const char *target_name;
};

struct image {
    const char *path; /* exactly as given: messages name it so (§ conventions) */
    int fd;
    Elf64_Ehdr ehdr;
    Elf64_Phdr *phdrs;
    struct manifest mft;
};

struct range {
    uint64_t start, end;
};

/* Step 2 of §1.8: open, check the ELF header, the ABI note and the manifest.
 * Every failure exits 1 with solo5's text. */
void image_open(struct image *img, const char *path, const struct abi *abi);

/* Where the segments go: guest address a is host address base + a. */
struct load_target {
    uintptr_t base;   /* hvt: the guest memory mapping; spt: 0 (the guest runs at its own addresses) */
    uint64_t mem_size;
    bool host_exec;   /* spt: PF_X segments are executable on the host, because the guest runs there */
};

struct loaded {
    uint64_t entry;
    uint64_t kernel_end;
    struct range *ro; /* the segments left read-only on the host */
    unsigned n_ro;
};

/* Step 7: copy the segments into guest memory and protect them on the host. */
void image_load(const struct image *img, const struct load_target *t, struct loaded *out);

#endif
