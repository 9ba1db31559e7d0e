/* notes-spt.c: what marks an spt image as solo5's toolchain marks it
 * (solo5-spt.md §1.1, §1.2): the ABI note, target spt (2), version 2,
 * reserved words 0; the OpenBSD note (owner "OpenBSD", type 1, 4 zero bytes),
 * which makes OpenBSD refuse to exec the image; and an interpreter that does
 * not exist, so that the Linux kernel refuses to exec it directly. The linker
 * script (spt.ld) gives each note its own PT_NOTE. */
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

__attribute__((section(".note.solo5.not_openbsd"), used, aligned(4))) static const struct {
    uint32_t namesz, descsz, type;
    char name[8];
    uint32_t desc;
} openbsd_note = {8, 4, 1, "OpenBSD", 0};

__attribute__((section(".interp"), used)) static const char interp[24] = "/nonexistent/solo5/";
