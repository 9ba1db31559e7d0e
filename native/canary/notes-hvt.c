/* notes-hvt.c: the ABI note of the hvt images: target hvt (1), version 2,
 * reserved words 0 (solo5.md §2.2). */
#include "notes.h"

__attribute__((section(".note.solo5.abi"), used, aligned(4))) static const struct {
    struct note_header h;
    uint32_t target, version, reserved0, reserved1;
} abi_note = {
    .h = {6, 16, NOTE_ABI_TYPE, "Solo5"},
    .target = 1,
    .version = 2,
    .reserved0 = 0,
    .reserved1 = 0,
};
