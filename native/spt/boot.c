/* boot.c: the low memory the guest reads at entry (solo5-spt.md §2.4, §2.5)
 * and the descriptors it waits on (§3.5). All of it is plain read-write guest
 * memory, as in solo5-spt. */
#include "boot.h"

#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>

#include "abi.h"
#include "args.h"
#include "devices.h"
#include "util.h"

_Static_assert(SPT_BOOT_INFO + SPT_BOOT_INFO_SIZE + MFT_MAX_SIZE + GUEST_CMDLINE_SIZE <= SPT_LOAD_MIN,
               "the low memory holds the largest manifest and command line");
_Static_assert(GUEST_CMDLINE_SIZE == SPT_CMDLINE_SIZE, "one command-line limit");

void boot_poll_fds(struct poll_fds *p)
{
    p->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    if (p->epoll_fd < 0)
        die_errno("epoll_create1() failed");
    /* Non-blocking and never read: the guest re-arms it, which clears an expiry. */
    p->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    if (p->timer_fd < 0)
        die_errno("timerfd_create() failed");
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = SPT_TIMER_TOKEN};
    if (epoll_ctl(p->epoll_fd, EPOLL_CTL_ADD, p->timer_fd, &ev) != 0)
        die_errno("epoll_ctl(EPOLL_CTL_ADD, timerfd) failed");
}

void boot_poll_taps(const struct poll_fds *p)
{
    int fds[MFT_MAX_ENTRIES];
    unsigned handles[MFT_MAX_ENTRIES];
    unsigned n = net_pollable(fds, handles);
    for (unsigned i = 0; i < n; i++) {
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = handles[i]};
        if (epoll_ctl(p->epoll_fd, EPOLL_CTL_ADD, fds[i], &ev) != 0)
            die_errno("epoll_ctl(EPOLL_CTL_ADD, hostfd=%d) failed", fds[i]);
    }
}

void boot_write_info(uint64_t mem_size, uint64_t kernel_end, const struct poll_fds *p, struct manifest *m,
                     int argc, char *const argv[])
{
    /* The guest makes its device calls on these descriptors itself, and the
     * filter allows exactly them. Bytes 92-95 of the entry stay as in the file. */
    for (unsigned i = 0; i < m->entries; i++) {
        uint8_t *e = manifest_entry(m, i);
        if (!e[MFT_E_ATTACHED])
            continue;
        const int32_t fd = devices[i].fd;
        memcpy(e + MFT_E_HOSTPRIV, &fd, sizeof fd);
    }

    const uint64_t mft = SPT_BOOT_INFO + SPT_BOOT_INFO_SIZE;
    const uint64_t cmdline = mft + m->size;
    args_guest_cmdline((char *)cmdline, argc, argv);
    memcpy((void *)mft, m->raw, m->size);

    const struct spt_boot_info bi = {
        .mem_size = mem_size,
        .kernel_end = kernel_end,
        .cmdline = cmdline,
        .mft = mft,
        .epoll_fd = p->epoll_fd,
        .timer_fd = p->timer_fd,
    };
    memcpy((void *)SPT_BOOT_INFO, &bi, sizeof bi);
}
