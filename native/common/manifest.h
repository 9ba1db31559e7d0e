/* manifest.h: the Solo5 manifest as the tender holds it: the note's content
 * (version, entries, 104-byte entries; solo5.md §2.3), validated once, then
 * filled in for attached devices and copied into the guest (§3.8). */
#ifndef PETREL_MANIFEST_H
#define PETREL_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MFT_VERSION 1
#define MFT_MAX_ENTRIES 64
#define MFT_ENTRY_SIZE 104
#define MFT_HEADER_SIZE 8
#define MFT_NAME_SIZE 68 /* 67 characters and the NUL */
#define MFT_MAX_SIZE (MFT_HEADER_SIZE + MFT_MAX_ENTRIES * MFT_ENTRY_SIZE)

/* Entry field offsets. */
#define MFT_E_NAME 0
#define MFT_E_TYPE 68
#define MFT_E_PROPS 72   /* block: capacity u64 @72, block_size u16 @80; net: mac @72, mtu u16 @78 */
#define MFT_E_HOSTPRIV 88
#define MFT_E_ATTACHED 96

enum mft_type { MFT_BLOCK_BASIC = 1, MFT_NET_BASIC = 2, MFT_RESERVED_FIRST = 0x40000000 };

struct manifest {
    uint8_t raw[MFT_MAX_SIZE];
    size_t size;
    uint32_t entries;
};

/* solo5's rules, exactly: size, version, count, entry 0, terminated names, attached = 0. */
bool manifest_parse(struct manifest *m, const uint8_t *content, size_t size);

uint32_t manifest_type(const struct manifest *m, unsigned i);
const char *manifest_name(const struct manifest *m, unsigned i);
uint8_t *manifest_entry(struct manifest *m, unsigned i);

/* Index of the first entry with this name and type, or -1: the lookup guests make too. */
int manifest_find(const struct manifest *m, const char *name, uint32_t type);

#endif
