/* hypercalls.c: the core hypercalls (WALLTIME, PUTS, POLL, HALT) and the
 * dispatch table. Every guest address goes through guest_in/guest_out, the
 * argument structure with its full size first, then each buffer (§3.12). */
#include "hypercalls.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "devices.h"
#include "util.h"

static hypercall_fn table[HC_MAX + 1];

void hypercall_register(unsigned n, hypercall_fn fn)
{
    table[n] = fn;
}

static void hc_walltime(const struct guest *g, uint64_t gpa)
{
    uint8_t *p = guest_out(g, gpa, 8, "WALLTIME");
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t ns = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
    memcpy(p, &ns, 8);
}

/* Console output is best effort: partial writes are completed, errors drop
 * the output. solo5-hvt asserts instead and can then hang forever (§1.12);
 * a closed console must never take the tender down with it. SIGPIPE keeps
 * its default action, as in solo5, so a vanished reader still ends the run. */
static void hc_puts(const struct guest *g, uint64_t gpa)
{
    const uint8_t *p = guest_in(g, gpa, 16, "PUTS");
    uint64_t data, len;
    memcpy(&data, p, 8);
    memcpy(&len, p + 8, 8);
    const char *buf = guest_in(g, data, len, "PUTS data");
    while (len > 0) {
        ssize_t n = write(1, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        buf += n;
        len -= (uint64_t)n;
    }
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Sleep until a tap is readable or the timeout passes. Interrupted waits are
 * resumed with the time left; SIGTERM/SIGINT never return here (their
 * handler exits). */
static void hc_poll(const struct guest *g, uint64_t gpa)
{
    uint8_t *p = guest_out(g, gpa, 24, "POLL");
    uint64_t timeout;
    memcpy(&timeout, p, 8);

    int fds[MFT_MAX_ENTRIES];
    unsigned handles[MFT_MAX_ENTRIES];
    struct pollfd pfd[MFT_MAX_ENTRIES];
    unsigned n = net_pollable(fds, handles);
    for (unsigned i = 0; i < n; i++)
        pfd[i] = (struct pollfd){.fd = fds[i], .events = POLLIN};

    uint64_t start = now_ns();
    uint64_t deadline = timeout > UINT64_MAX - start ? UINT64_MAX : start + timeout;
    int r;
    for (;;) {
        uint64_t t = now_ns();
        uint64_t left = t >= deadline ? 0 : deadline - t;
        struct timespec ts = {.tv_sec = (time_t)(left / 1000000000ULL), .tv_nsec = (long)(left % 1000000000ULL)};
        r = ppoll(pfd, n, &ts, NULL);
        if (r >= 0 || errno != EINTR)
            break;
    }
    if (r < 0)
        die_errno("POLL: ppoll failed");

    uint64_t ready = 0;
    int32_t count = 0;
    for (unsigned i = 0; r > 0 && i < n; i++)
        if (pfd[i].revents & POLLIN) {
            ready |= 1ULL << handles[i];
            count++;
        }
    memcpy(p + 8, &ready, 8);
    memcpy(p + 16, &count, 4);
}

void hypercalls_init(void)
{
    memset(table, 0, sizeof table);
    hypercall_register(HC_WALLTIME, hc_walltime);
    hypercall_register(HC_PUTS, hc_puts);
    hypercall_register(HC_POLL, hc_poll);
}

void hypercall(const struct guest *g, unsigned n, uint64_t gpa)
{
    if (n > HC_MAX || table[n] == NULL)
        die("Invalid guest hypercall: num=%u", n);
    table[n](g, gpa);
}

int hypercall_halt(const struct guest *g, uint64_t gpa)
{
    const uint8_t *p = guest_in(g, gpa, 16, "HALT");
    uint64_t cookie;
    int32_t status;
    memcpy(&cookie, p, 8);
    memcpy(&status, p + 8, 4);
    /* The cookie (solo5's trap frame) is only checked: this tender writes no
     * core files, but an out-of-bounds cookie is still the guest's error. */
    if (cookie != 0)
        (void)guest_in(g, cookie, 512, "HALT cookie");
    return status & 0xff;
}
