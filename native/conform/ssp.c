/* ssp.c: the stack protector with a global guard (solo5-spt.md §1.1: solo5
 * compiles with -fstack-protector-strong -mstack-protector-guard=global): a
 * write past a local buffer changes the guard word, the function's epilogue
 * notices and calls __stack_chk_fail, which halts 255 (§3.6). */
#include "conform.h"

static volatile size_t overrun = 32; /* unknown to the compiler, so it cannot refuse */

__attribute__((noinline)) static void smash(void)
{
    char buf[16];
    memset(buf, 'x', sizeof buf + overrun);
    __asm__ __volatile__("" : : "r"(buf) : "memory");
}

void conform_ssp(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    check("guard set", __stack_chk_guard != 0 && (__stack_chk_guard & 0xff00) == 0, "guard not as _start sets it");
    note("ssp: overrunning a stack buffer");
    smash();
    note("ssp: FAILED survived");
    halt(1);
}
