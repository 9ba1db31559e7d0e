/* notes.c: finding and checking the Solo5 notes the way solo5's tenders do
 * (solo5.md §2.1-§2.4): through PT_NOTE program headers, looking only at the
 * first note of each segment, with solo5's size limits and messages. The
 * tender says which ABI target and version it speaks. */
#include "image.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

#define NOTE_HEADER 20     /* namesz, descsz, type, "Solo5\0" padded to 8 */
#define NOTE_ABI_TYPE 0x31494241u
#define NOTE_MFT_TYPE 0x3154464Du
#define NOTE_ABI_MAX 32
#define NOTE_MFT_MAX (MFT_MAX_SIZE + 4)
#define NOTE_MFT_PAD 4     /* the manifest content is 8-aligned: 20 + 4 */

static _Noreturn void invalid(const struct image *img, const char *what)
{
    die("%s: invalid executable: %s", img->path, what);
}

static void read_header(struct image *img)
{
    ssize_t n = pread(img->fd, &img->ehdr, sizeof img->ehdr, 0);
    if (n != (ssize_t)sizeof img->ehdr)
        die("%s: invalid executable: elf header does not match the expected size (%zd != %zu)",
            img->path, n, sizeof img->ehdr);

    const Elf64_Ehdr *h = &img->ehdr;
    /* OS/ABI is not looked at; everything else must be a static x86_64 executable. */
    if (memcmp(h->e_ident, ELFMAG, SELFMAG) != 0 || h->e_ident[EI_CLASS] != ELFCLASS64 ||
        h->e_ident[EI_DATA] != ELFDATA2LSB || h->e_version != EV_CURRENT ||
        h->e_ehsize != sizeof(Elf64_Ehdr) || h->e_phentsize != sizeof(Elf64_Phdr) ||
        h->e_phnum < 1 || h->e_type != ET_EXEC || h->e_machine != EM_X86_64)
        invalid(img, "invalid or unsupported executable (elf header invalid while loading note)");

    size_t want = (size_t)h->e_phnum * sizeof(Elf64_Phdr);
    img->phdrs = malloc(want);
    if (img->phdrs == NULL)
        die_errno("%s: could not allocate program headers", img->path);
    n = pread(img->fd, img->phdrs, want, (off_t)h->e_phoff);
    if (n != (ssize_t)want)
        die("%s: invalid executable: program header does not match the expected size "
            "(%zd != %zu while loading note)",
            img->path, n, want);
}

/* The descriptor of the first Solo5 note of this type, with its size; or
 * NULL. The caller frees it. */
static uint8_t *find_note(const struct image *img, uint32_t type, uint32_t max, uint32_t *descsz,
                          unsigned *index)
{
    for (unsigned i = 0; i < img->ehdr.e_phnum; i++) {
        const Elf64_Phdr *p = &img->phdrs[i];
        if (p->p_type != PT_NOTE)
            continue;
        if (p->p_filesz < 12)
            die("%s: invalid executable: phdr[%u].p_filesz note does not fall within valid size "
                "(%lu < 12)",
                img->path, i, (unsigned long)p->p_filesz);
        if (p->p_filesz < NOTE_HEADER)
            continue;
        uint8_t hdr[NOTE_HEADER];
        if (pread(img->fd, hdr, sizeof hdr, (off_t)p->p_offset) != (ssize_t)sizeof hdr)
            continue;
        uint32_t namesz, dsz, ntype;
        memcpy(&namesz, hdr, 4);
        memcpy(&dsz, hdr + 4, 4);
        memcpy(&ntype, hdr + 8, 4);
        if (namesz != 6 || memcmp(hdr + 12, "Solo5", 6) != 0 || ntype != type)
            continue;
        if (dsz < 1 || dsz > max)
            die("%s: invalid executable: phdr[%u] note does not fall within valid size "
                "(%u < 1 || %u > %u)",
                img->path, i, dsz, dsz, max);
        if (p->p_filesz < (uint64_t)NOTE_HEADER + dsz)
            die("%s: invalid executable: phdr[%u] note does not fall within valid size (%lu < 20+%u)",
                img->path, i, (unsigned long)p->p_filesz, dsz);
        uint8_t *desc = calloc(1, max);
        if (desc == NULL)
            die_errno("%s: could not allocate note", img->path);
        ssize_t n = pread(img->fd, desc, dsz, (off_t)(p->p_offset + NOTE_HEADER));
        if (n != (ssize_t)dsz)
            die("%s: invalid executable: phdr[%u] note could not be read", img->path, i);
        *descsz = dsz;
        *index = i;
        return desc;
    }
    return NULL;
}

static void check_abi(const struct image *img, const struct abi *abi)
{
    uint32_t dsz;
    unsigned i;
    uint8_t *d = find_note(img, NOTE_ABI_TYPE, NOTE_ABI_MAX, &dsz, &i);
    if (d == NULL)
        die("%s: No Solo5 ABI information found in executable", img->path);
    /* A short descriptor reads as zeros (the buffer is zero-filled), so it
     * fails one of the two checks below rather than reading past it. */
    uint32_t target, version;
    memcpy(&target, d, 4);
    memcpy(&version, d + 4, 4);
    free(d);
    if (target != abi->target)
        die("%s: Executable is not for the %s target", img->path, abi->target_name);
    if (version != abi->version)
        die("%s: Executable requests unsupported ABI version %u", img->path, version);
}

static void read_manifest(struct image *img)
{
    uint32_t dsz;
    unsigned i;
    uint8_t *d = find_note(img, NOTE_MFT_TYPE, NOTE_MFT_MAX, &dsz, &i);
    if (d == NULL)
        die("%s: No Solo5 manifest found in executable", img->path);
    if (dsz <= NOTE_MFT_PAD) {
        /* solo5 subtracts the padding unsigned and prints the wrapped size under
         * its INV_EXE label; keep the shape so such images read the same. */
        uint64_t s = (uint64_t)dsz - NOTE_MFT_PAD;
        die("%s: INV_EXE: phdr[%u] note does not fall within valid size (%lu <= 0 || %lu > %u)",
            img->path, i, (unsigned long)s, (unsigned long)s, (unsigned)MFT_MAX_SIZE);
    }
    bool ok = manifest_parse(&img->mft, d + NOTE_MFT_PAD, dsz - NOTE_MFT_PAD);
    free(d);
    if (!ok)
        die("%s: Solo5 manifest is invalid", img->path);
}

void image_open(struct image *img, const char *path, const struct abi *abi)
{
    memset(img, 0, sizeof *img);
    img->path = path;
    img->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (img->fd < 0)
        die_errno("%s: Could not open", path);
    read_header(img);
    check_abi(img, abi);
    read_manifest(img);
}
