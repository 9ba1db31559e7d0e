/* notes-spt.c: the ABI note of the spt images: target spt (2) and Petrel's
 * spt ABI version (native/spt/ABI.md), reserved words 0. */
#include "abi.h"
#include "notes.h"

__attribute__((section(".note.solo5.abi"), used, aligned(4))) static const struct {
    struct note_header h;
    uint32_t target, version, reserved0, reserved1;
} abi_note = {
    .h = {6, 16, NOTE_ABI_TYPE, "Solo5"},
    .target = SPT_ABI_TARGET,
    .version = SPT_ABI_VERSION,
    .reserved0 = 0,
    .reserved1 = 0,
};
