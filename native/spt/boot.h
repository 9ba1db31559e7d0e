/* boot.h: what petrel-spt hands the guest (ABI.md, "Boot information"). */
#ifndef PETREL_SPT_BOOT_H
#define PETREL_SPT_BOOT_H

#include <stdint.h>

#include "manifest.h"

/* The epoll set (every attached network device, data = its manifest index,
 * and the timer, data = SPT_TIMER_TOKEN) and the timer the guest waits with. */
struct poll_fds {
    int epoll_fd, timer_fd;
};
void boot_poll_fds(struct poll_fds *p);

/* Writes each attached device's host descriptor into its manifest entry, then
 * the boot information, the manifest copy and the joined command line at
 * SPT_BOOT_INFO. Exits 1 if the arguments do not fit in 8191 characters. */
void boot_write_info(uint64_t mem_size, uint64_t kernel_end, uint64_t start_ns, const struct poll_fds *p,
                     struct manifest *m, int argc, char *const argv[]);

#endif
