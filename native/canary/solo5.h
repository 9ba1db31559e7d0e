/* solo5.h: what every solo5 platform shares with the canary: the manifest the
 * tender copies into the guest (solo5.md §2.3) and solo5's result codes.
 * Written from the spec, not from solo5's headers. */
#ifndef CANARY_SOLO5_H
#define CANARY_SOLO5_H

#include <stdint.h>

#define MFT_BLOCK_BASIC 1u
#define MFT_NET_BASIC 2u
#define MFT_RESERVED_FIRST 0x40000000u
#define MFT_MAX_ENTRIES 64

/* 104 bytes; byte arrays for the unions so the layout is explicit. */
struct mft_entry {
    char name[68];
    uint32_t type;
    uint8_t props[16];        /* block: capacity u64 @0, block_size u16 @8; net: mac @0, mtu u16 @6 */
    uint8_t host_private[8];  /* hvt: 0; spt: the device's host descriptor */
    uint8_t attached;
    uint8_t pad[7];
};
_Static_assert(sizeof(struct mft_entry) == 104, "manifest entry is 104 bytes");

struct mft {
    uint32_t version;
    uint32_t entries;
    struct mft_entry e[];
};

#define SOLO5_R_OK 0
#define SOLO5_R_AGAIN 1
#define SOLO5_R_EINVAL 2
#define SOLO5_R_EUNSPEC 3

#endif
