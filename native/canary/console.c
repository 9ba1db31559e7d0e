/* console.c: output from one static buffer, sleeping and halting. Lines are
 * collected and handed to the platform in as few writes as possible: on hvt
 * each is an exit, which costs tens of microseconds on kvm-pvm hosts
 * (solo5.md §5.3); on spt each is a system call. */
#include "canary.h"

static char buf[4096];
static size_t len;

void flush(void)
{
    if (len == 0)
        return;
    plat_puts(buf, len);
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

/* Frames that reach a mode with no use for them: read and dropped, as a network stack would. */
static void drop_frames(uint64_t ready)
{
    static uint8_t frame[9216 + 14]; /* a jumbo MTU and its header */
    for (uint64_t h = 0; h < 64; h++) {
        if (!(ready & (1ULL << h)))
            continue;
        for (int32_t r = SOLO5_R_OK; r == SOLO5_R_OK;) {
            uint64_t len = sizeof frame;
            r = plat_net_read(h, frame, &len);
        }
    }
}

void sleep_ns(uint64_t ns)
{
    uint64_t deadline = monotonic_ns() + ns;
    for (;;) {
        uint64_t now = monotonic_ns();
        if (now >= deadline)
            return;
        /* POLL returns early while a tap is readable, and a tap stays readable until its
         * frames are read: take them, or this loop spins until the deadline. */
        drop_frames(plat_poll(deadline - now));
    }
}

void halt(int status)
{
    flush();
    plat_halt(status);
}
