/* boot.c: the boot window at SPT_BOOT_INFO and the descriptors the guest
 * waits on. The window is written while still writable; memory_protect makes
 * it read-only before the guest runs. */
#include "boot.h"

#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>

#include "abi.h"
#include "args.h"
#include "devices.h"
#include "util.h"

_Static_assert(SPT_BOOT_INFO + SPT_BOOT_INFO_SIZE + MFT_MAX_SIZE + GUEST_CMDLINE_SIZE <= SPT_LOAD_MIN,
               "the boot window holds the largest manifest and command line");

void boot_poll_fds(struct poll_fds *p)
{
    p->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    if (p->epoll_fd < 0)
        die_errno("Could not create the epoll set");
    p->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    if (p->timer_fd < 0)
        die_errno("Could not create the timer");
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = SPT_TIMER_TOKEN};
    if (epoll_ctl(p->epoll_fd, EPOLL_CTL_ADD, p->timer_fd, &ev) != 0)
        die_errno("Could not add the timer to the epoll set");
    int fds[MFT_MAX_ENTRIES];
    unsigned handles[MFT_MAX_ENTRIES];
    unsigned n = net_pollable(fds, handles);
    for (unsigned i = 0; i < n; i++) {
        ev = (struct epoll_event){.events = EPOLLIN, .data.u64 = handles[i]};
        if (epoll_ctl(p->epoll_fd, EPOLL_CTL_ADD, fds[i], &ev) != 0)
            die_errno("Could not add a network device to the epoll set");
    }
}

void boot_write_info(uint64_t mem_size, uint64_t kernel_end, uint64_t start_ns, const struct poll_fds *p,
                     struct manifest *m, int argc, char *const argv[])
{
    for (unsigned i = 0; i < m->entries; i++) {
        uint8_t *e = manifest_entry(m, i);
        if (!e[MFT_E_ATTACHED])
            continue;
        uint64_t fd = (uint64_t)devices[i].fd;
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
        .start_ns = start_ns,
        .epoll_fd = p->epoll_fd,
        .timer_fd = p->timer_fd,
    };
    memcpy((void *)SPT_BOOT_INFO, &bi, sizeof bi);
}
