/* manifest.c: canary.hvt declares no devices: only the reserved entry. */
#include "notes.h"

CANARY_MANIFEST(0);
