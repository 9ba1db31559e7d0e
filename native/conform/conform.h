/* conform.h: the conformance unikernels (solo5-spt.md §6), one program, one
 * mode per behaviour a drop-in spt tender must give a guest. Written from the
 * spec, not from solo5's tests. They stand on the canary's spt platform layer
 * (../canary/spt.c, console.c, lib.c) as solo5's tests stand on its bindings,
 * but are built as solo5 builds applications: stack protector on with a global
 * guard, SSE allowed, the layout of ../canary/spt.ld. Each mode prints
 * "conform MODE: ..." lines and halts; the tests run them under petrel-spt and,
 * where there is one, under solo5-spt, and require the same output and status. */
#ifndef CONFORM_H
#define CONFORM_H

#include "canary.h"

/* The stack protector's guard (-mstack-protector-guard=global), set by _start. */
extern uintptr_t __stack_chk_guard;

/* Each takes the words after the mode (argc, argv as the canary's modes). */
_Noreturn void conform_globals(int argc, char **argv);
_Noreturn void conform_tls(int argc, char **argv);
_Noreturn void conform_fpu(int argc, char **argv);
_Noreturn void conform_ssp(int argc, char **argv);
_Noreturn void conform_fault(int argc, char **argv);
_Noreturn void conform_blk(int argc, char **argv);
_Noreturn void conform_net(int argc, char **argv);

/* "conform <s>\n", flushed. */
void note(const char *s);

/* v in decimal at dst; returns the number of characters. */
size_t decimal(uint8_t *dst, uint64_t v);

/* "conform <what>: ok" or "conform <what>: FAILED <detail>", flushed; a
 * failure halts 1 at once. */
void check(const char *what, int ok, const char *detail);

#endif
