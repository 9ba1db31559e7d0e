/* start.c: the conformance unikernels' entry, what solo5's bindings do before
 * the application (solo5-spt.md §3.6): a stack-protector guard from the TSC
 * with bits 8-15 cleared (a zero byte stops string overflows), FS base 0 so
 * that thread variables used before the guest sets its own base fault, then
 * the mode named by the first word of the command line. */
#include "conform.h"
#include "spt.h"

uintptr_t __stack_chk_guard;

static const struct mode modes[] = {
    {"globals", conform_globals}, {"tls", conform_tls}, {"fpu", conform_fpu}, {"ssp", conform_ssp},
    {"fault", conform_fault},     {"blk", conform_blk}, {"net", conform_net},
};

/* The guard is not set yet: this function must not check it. */
__attribute__((no_stack_protector, noreturn, used)) void _start(const void *boot_info)
{
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    const uint64_t tsc = ((uint64_t)hi << 32) | lo;
    __stack_chk_guard = (tsc + (tsc << 32)) & ~0xff00ULL;
    sys3(SYS_arch_prctl, 0x1002 /* ARCH_SET_FS */, 0, 0);
    plat_init(boot_info);

    static char line[SPT_CMDLINE_SIZE];
    static char *argv[16];
    int argc = 0;
    const char *src = plat_cmdline();
    size_t n = str_len(src);
    memcpy(line, src, n < sizeof line ? n : sizeof line - 1);
    for (char *p = line; *p && argc < 15;) {
        while (*p == ' ')
            *p++ = '\0';
        if (*p)
            argv[argc++] = p;
        while (*p && *p != ' ')
            p++;
    }
    for (size_t i = 0; argc > 0 && i < sizeof modes / sizeof modes[0]; i++)
        if (str_eq(argv[0], modes[i].name))
            modes[i].run(argc, argv);
    note("no such mode");
    halt(2);
}

/* Called by the code the compiler adds when a function's guard word changed. */
__attribute__((noreturn)) void __stack_chk_fail(void)
{
    note("ssp: stack corruption detected");
    halt(255);
}

void note(const char *s)
{
    put_s("conform ");
    put_s(s);
    put_s("\n");
    flush();
}

void check(const char *what, int ok, const char *detail)
{
    put_s("conform ");
    put_s(what);
    put_s(ok ? ": ok\n" : ": FAILED ");
    if (!ok) {
        put_s(detail);
        put_s("\n");
        halt(1);
    }
    flush();
}

size_t decimal(uint8_t *dst, uint64_t v)
{
    char digits[20];
    size_t d = 0, n = 0;
    do {
        digits[d++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (d)
        dst[n++] = (uint8_t)digits[--d];
    return n;
}
