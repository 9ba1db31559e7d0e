/* manifest-blk.c: canary-blk.hvt declares one block device, "storage". */
#include "notes.h"

CANARY_MANIFEST(1, {.name = "storage", .type = MFT_BLOCK_BASIC});
