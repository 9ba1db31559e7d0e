/* modes.c: the small modes: hello, exit, wait, sleep, flood, oob. Each ends
 * with HALT (or never ends), because returning would jump to address 0. */
#include "canary.h"

static const char *arg(int argc, char **argv, int i, const char *fallback)
{
    return i < argc ? argv[i] : fallback;
}

static int64_t int_arg(int argc, char **argv, int i, int64_t fallback)
{
    int64_t v;
    if (i >= argc)
        return fallback;
    if (!parse_int(argv[i], &v)) {
        put_s("petrel-canary bad number ");
        put_s(argv[i]);
        put_s("\n");
        halt(2);
    }
    return v;
}

/* Second line: how long the VM took from vCPU creation (where KVM starts the
 * guest TSC at 0) to the first guest instruction, and the wall clock at that
 * moment, so a host can subtract its own spawn time. */
void mode_hello(int argc, char **argv)
{
    put_s("petrel-canary ");
    put_s(arg(argc, argv, 1, "hello"));
    put_s("\n");
    uint64_t tsc = entry_state[ENTRY_TSC], f = boot->cpu_cycle_freq;
    put_s("petrel-canary boot_us=");
    put_u(tsc / f * 1000000ULL + tsc % f * 1000000ULL / f);
    put_s(" walltime_ns=");
    put_u(walltime_ns());
    put_s("\n");
    halt(0);
}

void mode_exit(int argc, char **argv)
{
    halt((int)int_arg(argc, argv, 1, 0));
}

void mode_wait(int argc, char **argv)
{
    put_s("petrel-canary ");
    put_s(arg(argc, argv, 1, "waiting"));
    put_s("\n");
    flush();
    for (;;)
        sleep_ns(1000000000ULL);
}

void mode_sleep(int argc, char **argv)
{
    int64_t s = int_arg(argc, argv, 1, 1);
    for (int64_t i = 1; i <= s; i++) {
        sleep_ns(1000000000ULL);
        put_s("petrel-canary tick ");
        put_i(i);
        put_s("\n");
        flush();
    }
    halt(0);
}

void mode_flood(int argc, char **argv)
{
    int64_t n = int_arg(argc, argv, 1, 1000);
    for (int64_t i = 1; i <= n; i++) {
        /* Flush only when a line might not fit: many lines per PUTS. */
        if (console_room() < 64)
            flush();
        put_s("petrel-canary flood ");
        put_i(i);
        put_s("\n");
    }
    halt(0);
}

/* Out-of-bounds addresses on purpose; the tender must stop the VM with exit 1
 * and its bounds message. Should it not, the canary halts with 3, which no
 * test accepts.
 *   puts   PUTS data just past the end of memory
 *   struct the PUTS structure itself overlapping the end of memory
 *   halt   a HALT cookie whose 512 bytes overrun memory
 *   edge   3 bytes ending on the last byte but one (allowed), then 4 bytes
 *          ending on the last byte (refused: the check is strict, §3.12) */
void mode_oob(int argc, char **argv)
{
    const char *what = arg(argc, argv, 1, "puts");
    const uint64_t top = boot->mem_size;
    say(what);
    if (str_eq(what, "puts")) {
        volatile struct hvt_puts p = {.data = top, .len = 16};
        hvt_call(HVT_PUTS, &p);
    } else if (str_eq(what, "struct")) {
        hvt_call_addr(HVT_PUTS, top - 8);
    } else if (str_eq(what, "halt")) {
        volatile struct hvt_halt h = {.cookie = top - 256, .exit_status = 0};
        hvt_call(HVT_HALT, &h);
    } else if (str_eq(what, "edge")) {
        volatile struct hvt_puts p = {.data = top - 4, .len = 3};
        hvt_call(HVT_PUTS, &p);
        p.len = 4;
        hvt_call(HVT_PUTS, &p);
    } else {
        halt(2);
    }
    halt(3);
}
