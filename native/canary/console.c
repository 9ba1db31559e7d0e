/* console.c: output through PUTS from one static buffer, and time. Lines are
 * collected and written with as few hypercalls as possible: each exit costs
 * tens of microseconds on kvm-pvm hosts (solo5.md §5.3). */
#include "canary.h"

static char buf[4096];
static size_t len;

void flush(void)
{
    if (len == 0)
        return;
    volatile struct hvt_puts p = {.data = (uint64_t)(uintptr_t)buf, .len = len};
    hvt_call(HVT_PUTS, &p);
    len = 0;
}

size_t console_room(void)
{
    return sizeof buf - len;
}

void put_n(const char *s, size_t n)
{
    while (n--) {
        if (len == sizeof buf)
            flush();
        buf[len++] = *s++;
    }
}

void put_s(const char *s)
{
    put_n(s, str_len(s));
}

void put_u(uint64_t v)
{
    char d[20];
    int n = 0;
    do {
        d[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n--)
        put_n(&d[n], 1);
}

void put_i(int64_t v)
{
    if (v < 0) {
        put_s("-");
        put_u(0 - (uint64_t)v);
    } else {
        put_u((uint64_t)v);
    }
}

void put_x(uint64_t v)
{
    static const char hex[] = "0123456789abcdef";
    char d[16];
    int n = 0;
    do {
        d[n++] = hex[v & 15];
        v >>= 4;
    } while (v);
    put_s("0x");
    while (n--)
        put_n(&d[n], 1);
}

void put_mac(const uint8_t mac[6])
{
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 6; i++) {
        char b[3] = {hex[mac[i] >> 4], hex[mac[i] & 15], ':'};
        put_n(b, i < 5 ? 3 : 2);
    }
}

void put_kv(const char *key, uint64_t v)
{
    put_s(key);
    put_s("=");
    put_x(v);
    put_s("\n");
}

void say(const char *s)
{
    put_s("petrel-canary ");
    put_s(s);
    put_s("\n");
    flush();
}

uint64_t walltime_ns(void)
{
    volatile struct hvt_walltime w = {0};
    hvt_call(HVT_WALLTIME, &w);
    return w.nsecs;
}

static uint64_t rdtsc(void)
{
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}

/* TSC ticks to nanoseconds without 128-bit arithmetic (which would need
 * libgcc): whole seconds, then the remainder, which stays below 2^63. */
uint64_t monotonic_ns(void)
{
    uint64_t t = rdtsc(), f = boot->cpu_cycle_freq;
    return t / f * 1000000000ULL + t % f * 1000000000ULL / f;
}

void sleep_ns(uint64_t ns)
{
    uint64_t deadline = monotonic_ns() + ns;
    for (;;) {
        uint64_t now = monotonic_ns();
        if (now >= deadline)
            return;
        /* POLL returns early when a tap is readable; the loop absorbs that. */
        volatile struct hvt_poll p = {.timeout_nsecs = deadline - now};
        hvt_call(HVT_POLL, &p);
    }
}

void halt(int status)
{
    flush();
    volatile struct hvt_halt h = {.cookie = 0, .exit_status = status};
    hvt_call(HVT_HALT, &h);
    /* HALT does not return; if a tender ever resumed us, stay put. */
    for (;;)
        __asm__ __volatile__("pause");
}
