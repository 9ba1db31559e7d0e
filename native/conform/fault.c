/* fault.c: how the kernel ends a guest that breaks the rules
 * (solo5-spt.md §4.1, §5.4):
 *   fault syscall  dup(1), a system call not on the allow-list: SIGSYS (159)
 *   fault null     a read of address 0 (0 ... 0xFFFF is never mapped): SIGSEGV (139)
 *   fault return   returning from the entry function pops the 0 at the top of
 *                  the stack and jumps to address 0: SIGSEGV (139) */
#include "conform.h"
#include "spt.h"

#define SYS_dup 32

void conform_fault(int argc, char **argv)
{
    const char *what = arg(argc, argv, 1, "");
    put_s("conform fault: ");
    put_s(what);
    put_s("\n");
    flush();
    if (str_eq(what, "syscall")) {
        sys3(SYS_dup, 1, 0, 0);
    } else if (str_eq(what, "null")) {
        volatile uint8_t *p;
        __asm__("" : "=r"(p) : "0"((uintptr_t)0));
        (void)*p;
    } else if (str_eq(what, "return")) {
        /* The entry's stack: mem_size - 8 holds 0. Jump there as a return would. */
        const struct spt_boot_info *bi = boot;
        __asm__ __volatile__("mov %0, %%rsp\n\tret" : : "r"(bi->mem_size - 8) : "memory");
    } else {
        halt(2);
    }
    note("fault: FAILED survived");
    halt(1);
}
