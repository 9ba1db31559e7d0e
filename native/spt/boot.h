/* boot.h: what petrel-spt hands the guest (solo5-spt.md §2.4, §2.5, §3.5):
 * the epoll set and timer it waits with, the boot information, the manifest
 * copy and the command line. */
#ifndef PETREL_SPT_BOOT_H
#define PETREL_SPT_BOOT_H

#include <stdint.h>

#include "manifest.h"

/* The epoll set and the CLOCK_MONOTONIC timer in it (data = SPT_TIMER_TOKEN),
 * made right after guest memory (§2.7 step 4). */
struct poll_fds {
    int epoll_fd, timer_fd;
};
void boot_poll_fds(struct poll_fds *p);

/* The net module's part of the set-up (§3.2): each attached tap in the epoll
 * set, level-triggered EPOLLIN, data = its manifest index. */
void boot_poll_taps(const struct poll_fds *p);

/* Writes each attached device's host descriptor into its manifest entry
 * (hostfd, §3.3), then the boot information, the manifest copy and the joined
 * command line from SPT_BOOT_INFO on. Exits 1 if the arguments do not fit in
 * 8191 characters. */
void boot_write_info(uint64_t mem_size, uint64_t kernel_end, const struct poll_fds *p, struct manifest *m,
                     int argc, char *const argv[]);

#endif
