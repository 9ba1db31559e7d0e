/* modes.c: the small modes: hello, exit, wait, sleep, count, flood (flat out or paced). Each ends
 * with HALT (or never ends), because returning would jump to address 0. */
#include "canary.h"

/* Second line: what the platform can truthfully tell about its start (see
 * plat_hello_line). */
void mode_hello(int argc, char **argv)
{
    put_s("petrel-canary ");
    put_s(arg(argc, argv, 1, "hello"));
    put_s("\n");
    plat_hello_line();
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

/* A numbered line every MS milliseconds (default 100), N of them (0, the default: forever), so
 * a test can tell whether a console lost a line, e.g. across daemon restarts. */
void mode_count(int argc, char **argv)
{
    int64_t ms = int_arg(argc, argv, 1, 100);
    int64_t n = int_arg(argc, argv, 2, 0);
    for (int64_t i = 1; n == 0 || i <= n; i++) {
        put_s("petrel-canary count ");
        put_i(i);
        put_s("\n");
        flush();
        sleep_ns((uint64_t)ms * 1000000ULL);
    }
    halt(0);
}

/* N numbered lines (default 1000) as fast as the console takes them, many a write; or, with
 * PER_MS > 0, paced: PER_MS lines every millisecond (50 is 50,000 lines a second), each its
 * own write as a guest that logs line by line does, on an absolute schedule (late lines are
 * caught up), then HALT. */
void mode_flood(int argc, char **argv)
{
    int64_t n = int_arg(argc, argv, 1, 1000);
    int64_t per_ms = int_arg(argc, argv, 2, 0);
    if (per_ms > 0) {
        uint64_t start = monotonic_ns();
        for (int64_t i = 1; i <= n; i++) {
            put_s("petrel-canary flood ");
            put_i(i);
            put_s("\n");
            flush();
            if (i % per_ms == 0) {
                uint64_t due = start + (uint64_t)(i / per_ms) * 1000000ULL;
                uint64_t now = monotonic_ns();
                if (due > now)
                    sleep_ns(due - now);
            }
        }
        halt(0);
    }
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
