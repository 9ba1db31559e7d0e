/* main.c: petrel-spt, a tender for solo5 spt unikernels built for Petrel's spt
 * boot ABI (native/spt/ABI.md: target spt, version 1001). The guest runs in
 * this process, at its own addresses, and makes its own system calls under a
 * seccomp allow-list; there are no hypercalls and nothing to serve. In order:
 *
 *   1. start time, parent-death signal, descriptors 0-2, SIGTERM and SIGINT
 *      at their default action, no core files
 *   2. pass 1 over the options (--help, --version, find KERNEL)
 *   3. open KERNEL, check the ELF header, ABI note and manifest
 *   4. pass 2: --mem, --x-exec-heap and module options (block files opened,
 *      taps attached)
 *   5. map guest memory at 0x10000
 *   6. load the segments
 *   7. module set-up, then every declared device must be attached
 *   8. epoll set and timer; boot information, manifest copy, command line
 *   9. protections; refuse READ_IMPLIES_EXEC
 *  10. seccomp filter, then enter the guest, which never comes back: it ends
 *      with exit_group, or the kernel ends it (SIGSEGV, SIGSYS, a signal)
 *
 * No signal handler is installed (solo5-spt installs none either, §1.11):
 * SIGTERM kills the tender with the signal. */
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "abi.h"
#include "args.h"
#include "boot.h"
#include "cli.h"
#include "devices.h"
#include "image.h"
#include "memory.h"
#include "process.h"
#include "seccomp.h"
#include "util.h"

_Noreturn void spt_launch(uint64_t entry, uint64_t stack, uint64_t boot_info);

static uint64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* No handler, as solo5-spt (§1.11): SIGTERM and SIGINT kill the tender. Unlike
 * solo5-spt, their default action and delivery are restored whatever the
 * parent left (a shell's background job starts with SIGINT ignored), so a
 * supervisor's stop always works. */
static void default_stop_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    if (sigaction(SIGTERM, &sa, NULL) != 0 || sigaction(SIGINT, &sa, NULL) != 0 ||
        sigprocmask(SIG_UNBLOCK, &set, NULL) != 0)
        die_errno("Could not restore SIGTERM and SIGINT");
}

int main(int argc, char *argv[])
{
    const uint64_t start_ns = monotonic_ns();
    const char *slash = argc > 0 ? strrchr(argv[0], '/') : NULL;
    if (argc > 0)
        prog = slash ? slash + 1 : argv[0];
    die_with_parent();
    standard_fds_open();
    default_stop_signals();
    /* A crashing guest must not leave its memory on disk in a core file. */
    const struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);

    int kernel = args_pass1(&spt_cli, argc, argv);

    struct image img;
    image_open(&img, argv[kernel], &spt_abi);

    devices_init();
    const uint64_t mem_size = spt_mem_size(args_pass2(&spt_cli, argc, argv, kernel, &img.mft));

    memory_map(mem_size);

    struct loaded l;
    const struct load_target t = {.base = 0, .mem_size = mem_size, .host_exec = true};
    image_load(&img, &t, &l);
    close(img.fd);

    devices_setup(&img.mft);

    struct poll_fds p;
    boot_poll_fds(&p);
    boot_write_info(mem_size, l.kernel_end, start_ns, &p, &img.mft, argc - kernel - 1, argv + kernel + 1);

    memory_protect(l.kernel_end, mem_size, spt_exec_heap);
    refuse_read_implies_exec();

    /* The stack starts at the top of guest memory, aligned as at a function
     * entry; the word it points at is 0, so returning from the entry
     * function jumps to address 0 and faults (SIGSEGV). */
    seccomp_install(&p);
    spt_launch(l.entry, mem_size - 8, SPT_BOOT_INFO);
}
