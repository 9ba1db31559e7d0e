/* spt.c: the canary's spt platform, for solo5's spt ABI version 2
 * (../../../shared/spec/solo5-spt.md): the guest runs inside the tender's
 * process (petrel-spt or solo5-spt) and makes each system call itself (§3.4):
 * write(2) to descriptor 1 for the console, clock_gettime for time,
 * timerfd_settime and epoll_pwait on the tender's descriptors to wait,
 * pread64/pwrite64 on block descriptors, read/write on taps, exit_group to
 * halt. Like solo5's bindings, it refuses a block request that is not one
 * whole sector inside the device with EINVAL before any call: the filter
 * would kill for some of them. Written from the spec, not from solo5. */
#include "canary.h"
#include "spt.h"

const struct spt_boot_info *boot;
static uint64_t entered_ns;

struct k_timespec {
    int64_t tv_sec, tv_nsec;
};
struct k_itimerspec {
    struct k_timespec interval, value;
};
struct __attribute__((packed)) k_epoll_event {
    uint32_t events;
    uint64_t data;
};

#define CLOCK_REALTIME 0
#define CLOCK_MONOTONIC 1

static uint64_t clock_ns(long clock)
{
    struct k_timespec ts = {0, 0};
    sys3(SYS_clock_gettime, clock, (long)&ts, 0);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

void plat_init(const void *boot_arg)
{
    entered_ns = clock_ns(CLOCK_MONOTONIC);
    boot = boot_arg;
}

const char *plat_cmdline(void)
{
    return (const char *)(uintptr_t)boot->cmdline;
}

const struct mft *plat_manifest(void)
{
    return (const struct mft *)(uintptr_t)boot->mft;
}

uint64_t walltime_ns(void)
{
    return clock_ns(CLOCK_REALTIME);
}

uint64_t monotonic_ns(void)
{
    return clock_ns(CLOCK_MONOTONIC);
}

/* The tender tells the guest nothing about its own start (§2.5), so the
 * guest cannot know its boot time. What it knows truthfully is when its own
 * code began, on CLOCK_MONOTONIC, which is the host's clock: the host that
 * spawned the tender subtracts its spawn time from it. */
void plat_hello_line(void)
{
    put_s("petrel-canary entry_ns=");
    put_u(entered_ns);
    put_s(" walltime_ns=");
    put_u(walltime_ns());
    put_s("\n");
}

uint64_t plat_poll(uint64_t timeout_ns)
{
    /* A zero expiry would disarm the timer and the wait would never end. */
    if (timeout_ns == 0)
        timeout_ns = 1;
    struct k_itimerspec its = {
        .interval = {0, 0},
        .value = {(int64_t)(timeout_ns / 1000000000ULL), (int64_t)(timeout_ns % 1000000000ULL)},
    };
    /* Arming also clears an expiry left over from an earlier wait. */
    sys4(SYS_timerfd_settime, boot->timer_fd, 0, (long)&its, 0);
    struct k_epoll_event ev[MFT_MAX_ENTRIES + 1];
    long n = sys6(SYS_epoll_pwait, boot->epoll_fd, (long)ev, MFT_MAX_ENTRIES + 1, -1, 0, 0);
    uint64_t ready = 0;
    for (long i = 0; i < n; i++)
        if (ev[i].data < 64)
            ready |= 1ULL << ev[i].data;
    return ready;
}

void plat_puts(const char *buf, size_t len)
{
    while (len > 0) {
        long n = sys3(SYS_write, 1, (long)buf, (long)len);
        if (n > 0) {
            buf += n;
            len -= (size_t)n;
        } else if (n == -E_AGAIN) {
            (void)plat_poll(1000000); /* a non-blocking console is full: wait a little */
        } else if (n != -E_INTR) {
            return; /* a closed or failing console drops the output, as on hvt */
        }
    }
}

/* The device's Linux descriptor: hostfd, an int at entry offset 88 (§3.3). */
static int host_fd(const struct mft_entry *e)
{
    int32_t fd;
    memcpy(&fd, e->host_private, sizeof fd);
    return fd;
}

/* The descriptor of block device h if (offset, len) is one whole sector
 * inside it, at a sector boundary; -1 otherwise. */
static int block_fd(uint64_t h, uint64_t offset, uint64_t len)
{
    const struct mft_entry *e = device_at(h, MFT_BLOCK_BASIC);
    if (e == NULL)
        return -1;
    uint64_t capacity;
    uint16_t size;
    memcpy(&capacity, e->props, 8);
    memcpy(&size, e->props + 8, 2);
    if (len != size || offset % size != 0 || offset >= capacity || len > capacity - offset)
        return -1;
    return host_fd(e);
}

int32_t plat_block_write(uint64_t handle, uint64_t offset, const void *buf, uint64_t len)
{
    int fd = block_fd(handle, offset, len);
    if (fd < 0)
        return SOLO5_R_EINVAL;
    long n = sys4(SYS_pwrite64, fd, (long)buf, (long)len, (long)offset);
    return n == (long)len ? SOLO5_R_OK : SOLO5_R_EUNSPEC;
}

int32_t plat_block_read(uint64_t handle, uint64_t offset, void *buf, uint64_t len)
{
    int fd = block_fd(handle, offset, len);
    if (fd < 0)
        return SOLO5_R_EINVAL;
    long n = sys4(SYS_pread64, fd, (long)buf, (long)len, (long)offset);
    return n == (long)len ? SOLO5_R_OK : SOLO5_R_EUNSPEC;
}

int32_t plat_net_write(uint64_t handle, const void *buf, uint64_t len)
{
    const struct mft_entry *e = device_at(handle, MFT_NET_BASIC);
    if (e == NULL)
        return SOLO5_R_EINVAL;
    long n = sys3(SYS_write, host_fd(e), (long)buf, (long)len);
    if (n == (long)len)
        return SOLO5_R_OK;
    /* A full queue drops the frame, which solo5's API allows. */
    if (n == -E_AGAIN || n == -E_NOBUFS)
        return SOLO5_R_OK;
    return SOLO5_R_EUNSPEC;
}

int32_t plat_net_read(uint64_t handle, void *buf, uint64_t *len)
{
    const struct mft_entry *e = device_at(handle, MFT_NET_BASIC);
    if (e == NULL)
        return SOLO5_R_EINVAL;
    long n = sys3(SYS_read, host_fd(e), (long)buf, (long)*len);
    if (n > 0) {
        *len = (uint64_t)n;
        return SOLO5_R_OK;
    }
    if (n == 0 || n == -E_AGAIN || n == -E_INTR)
        return SOLO5_R_AGAIN;
    return SOLO5_R_EUNSPEC;
}

void plat_halt(int status)
{
    sys3(SYS_exit_group, status, 0, 0);
    for (;;)
        __asm__ __volatile__("pause");
}
