/* spt.h: the guest side of solo5's spt ABI, version 2 (solo5-spt.md §2,
 * §3.4): the boot information (spt/abi.h, shared with petrel-spt) and raw
 * x86_64 system calls, which the guest makes itself under the tender's
 * seccomp filter. */
#ifndef CANARY_SPT_H
#define CANARY_SPT_H

#include <stdint.h>

#include "abi.h"

/* What the tender passed in RDI (spt.c). */
extern const struct spt_boot_info *boot;

enum {
    SYS_read = 0,
    SYS_write = 1,
    SYS_pread64 = 17,
    SYS_pwrite64 = 18,
    SYS_getpid = 39,
    SYS_arch_prctl = 158,
    SYS_clock_gettime = 228,
    SYS_exit_group = 231,
    SYS_openat = 257,
    SYS_epoll_pwait = 281,
    SYS_timerfd_settime = 286,
};

#define E_INTR 4
#define E_AGAIN 11
#define E_FAULT 14
#define E_NOBUFS 105

/* Returns the kernel's result: a value, or -errno. */
static inline long sys6(long n, long a, long b, long c, long d, long e, long f)
{
    long r;
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    register long r9 __asm__("r9") = f;
    __asm__ __volatile__("syscall"
                         : "=a"(r)
                         : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                         : "rcx", "r11", "memory");
    return r;
}

static inline long sys3(long n, long a, long b, long c)
{
    return sys6(n, a, b, c, 0, 0, 0);
}

static inline long sys4(long n, long a, long b, long c, long d)
{
    return sys6(n, a, b, c, d, 0, 0);
}

/* spt-modes.c */
_Noreturn void mode_regs(int argc, char **argv);
_Noreturn void mode_oob(int argc, char **argv);
_Noreturn void mode_forbidden(int argc, char **argv);
_Noreturn void mode_fault(int argc, char **argv);

#endif
