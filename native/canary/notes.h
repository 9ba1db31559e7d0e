/* notes.h: the two Solo5 ELF notes (solo5.md §2.2, §2.3). Each lives in a
 * section of its own name (Albatross finds notes by section name) and the
 * linker script also makes each the first note of its own PT_NOTE segment
 * (solo5's tenders look only at the first note of each segment). */
#ifndef CANARY_NOTES_H
#define CANARY_NOTES_H

#include <stdint.h>

#include "solo5.h"

struct note_header {
    uint32_t namesz, descsz, type;
    char name[8]; /* "Solo5" and 3 NULs */
};

#define NOTE_ABI_TYPE 0x31494241u /* "ABI1" */
#define NOTE_MFT_TYPE 0x3154464Du /* "MFT1" */

/* The manifest note for the device entries given after the reserved entry 0.
 * The 4 padding bytes after the header align the content to 8 and count in
 * descsz. */
#define CANARY_MANIFEST(N, ...)                                                                          \
    __attribute__((section(".note.solo5.manifest"), used, aligned(8))) static const struct {             \
        struct note_header h;                                                                            \
        uint32_t pad, version, entries;                                                                  \
        struct mft_entry e[(N) + 1];                                                                     \
    } manifest_note = {                                                                                  \
        .h = {6, 4 + 8 + 104 * ((N) + 1), NOTE_MFT_TYPE, "Solo5"},                                       \
        .pad = 0,                                                                                        \
        .version = 1,                                                                                    \
        .entries = (N) + 1,                                                                              \
        .e = {{.name = "", .type = MFT_RESERVED_FIRST}, __VA_ARGS__},                                    \
    }

#endif
