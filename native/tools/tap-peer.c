/* tap-peer: the test suite's end of a tap, so tests can send and receive raw
 * Ethernet frames without python or tcpdump on the machine. It attaches to an
 * existing tap (IFF_TAP | IFF_NO_PI, as the tender does) in the current
 * network namespace, says "ready" on stdout, then:
 *
 *   tap-peer IFACE hold
 *       keep the tap attached until killed (tests of "Device or resource busy")
 *   tap-peer IFACE recv ETHERTYPE TIMEOUT_MS
 *       print the first frame of that EtherType as hex, exit 0; exit 2 on timeout
 *   tap-peer IFACE xchg HEXFRAME ETHERTYPE SRCMAC TIMEOUT_MS
 *       send the frame every 200 ms until a frame of that EtherType from SRCMAC
 *       (aa:bb:...) arrives; print it as hex, exit 0; exit 2 on timeout
 *
 * EtherType is hex (88b5). Exit 1 on any error, with a message on stderr. */
#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

static _Noreturn void fail(const char *what)
{
    fprintf(stderr, "tap-peer: %s: %s\n", what, strerror(errno));
    exit(1);
}

static int attach(const char *iface)
{
    int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
    if (fd < 0)
        fail("/dev/net/tun");
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", iface);
    ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
    if (ioctl(fd, TUNSETIFF, &ifr) < 0)
        fail(iface);
    printf("ready\n");
    fflush(stdout);
    return fd;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static size_t from_hex(const char *s, uint8_t *out, size_t max)
{
    size_t n = 0;
    while (s[0] && s[1] && n < max) {
        unsigned v;
        if (sscanf(s, "%2x", &v) != 1) {
            errno = EINVAL;
            fail("hex frame");
        }
        out[n++] = (uint8_t)v;
        s += 2;
    }
    return n;
}

static int parse_mac(const char *s, uint8_t mac[6])
{
    unsigned m[6];
    if (sscanf(s, "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]) != 6)
        return 0;
    for (int i = 0; i < 6; i++)
        mac[i] = (uint8_t)m[i];
    return 1;
}

/* Wait up to the deadline for a matching frame, resending `out` (if any)
 * every 200 ms. Returns 0 after printing the frame, 2 on timeout. */
static int wait_frame(int fd, unsigned ethertype, const uint8_t *src, const uint8_t *out, size_t out_len,
                      int64_t deadline)
{
    uint8_t frame[65536];
    int64_t next_send = 0;
    for (;;) {
        int64_t t = now_ms();
        if (t >= deadline)
            return 2;
        if (out_len > 0 && t >= next_send) {
            if (write(fd, out, out_len) < 0 && errno != EIO)
                fail("write");
            next_send = t + 200;
        }
        int64_t until = out_len > 0 && next_send < deadline ? next_send : deadline;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = poll(&p, 1, (int)(until - t));
        if (r < 0 && errno != EINTR)
            fail("poll");
        if (r <= 0)
            continue;
        ssize_t n = read(fd, frame, sizeof frame);
        if (n < 0)
            fail("read");
        if (n < 14 || ((unsigned)frame[12] << 8 | frame[13]) != ethertype)
            continue;
        if (src != NULL && memcmp(frame + 6, src, 6) != 0)
            continue;
        for (ssize_t i = 0; i < n; i++)
            printf("%02x", frame[i]);
        printf("\n");
        fflush(stdout);
        return 0;
    }
}

int main(int argc, char *argv[])
{
    if (argc >= 3 && strcmp(argv[2], "hold") == 0) {
        attach(argv[1]);
        for (;;)
            pause();
    }
    if (argc == 5 && strcmp(argv[2], "recv") == 0) {
        int fd = attach(argv[1]);
        unsigned type = (unsigned)strtoul(argv[3], NULL, 16);
        return wait_frame(fd, type, NULL, NULL, 0, now_ms() + atoi(argv[4]));
    }
    if (argc == 7 && strcmp(argv[2], "xchg") == 0) {
        uint8_t out[65536], src[6];
        size_t len = from_hex(argv[3], out, sizeof out);
        if (!parse_mac(argv[5], src)) {
            errno = EINVAL;
            fail("source MAC");
        }
        int fd = attach(argv[1]);
        unsigned type = (unsigned)strtoul(argv[4], NULL, 16);
        return wait_frame(fd, type, src, out, len, now_ms() + atoi(argv[6]));
    }
    fprintf(stderr, "usage: tap-peer IFACE hold | recv ETHERTYPE TIMEOUT_MS | "
                    "xchg HEXFRAME ETHERTYPE SRCMAC TIMEOUT_MS\n");
    return 1;
}
