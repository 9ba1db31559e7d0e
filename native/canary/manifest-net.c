/* manifest-net.c: canary-net.hvt declares one network device, "service". */
#include "notes.h"

CANARY_MANIFEST(1, {.name = "service", .type = MFT_NET_BASIC});
