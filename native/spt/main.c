/* main.c: petrel-spt, a tender for solo5 spt unikernels (ABI target spt,
 * version 2), a drop-in for solo5-spt v0.12.1 (../../shared/spec/solo5-spt.md).
 * The guest runs in this process, at its own addresses, and makes its own
 * system calls under a seccomp allow-list; there are no hypercalls and nothing
 * to serve. In solo5-spt's order (§2.7), so that a bad command line or image
 * reports the same problem first:
 *
 *   1. Petrel's own: parent-death signal, descriptors 0-2, SIGTERM and SIGINT
 *      at their default action, no core files
 *   2. pass 1 over the options (--help, --version, find KERNEL)
 *   3. open KERNEL, check the ELF header, ABI note and manifest
 *   4. pass 2: --mem, --x-exec-heap and module options (block files opened,
 *      taps attached)
 *   5. memory size check, refuse READ_IMPLIES_EXEC, map guest memory at
 *      0x10000, epoll set and timer
 *   6. load and protect the segments, close KERNEL
 *   7. module set-up, net then block; every declared device must be attached
 *   8. boot information, manifest copy, command line
 *   9. seccomp filter, then enter the guest, which never comes back: it ends
 *      with exit_group, or the kernel ends it (SIGSEGV, SIGSYS, a signal)
 *
 * No signal handler is installed (solo5-spt installs none either, §5.5):
 * SIGTERM kills the tender with the signal. */
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
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

/* No handler, as solo5-spt: SIGTERM and SIGINT kill the tender. Unlike
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
    const uint64_t mem_size = memory_size(args_pass2(&spt_cli, argc, argv, kernel, &img.mft));

    refuse_read_implies_exec();
    memory_map(mem_size, spt_exec_heap);
    struct poll_fds p;
    boot_poll_fds(&p);

    struct loaded l;
    const struct load_target t = {.base = 0, .mem_size = mem_size, .host_exec = true};
    image_load(&img, &t, &l);
    close(img.fd);

    devices_setup_net(&img.mft);
    boot_poll_taps(&p);
    devices_setup_block(&img.mft);
    devices_check_attached(&img.mft);

    boot_write_info(mem_size, l.kernel_end, &p, &img.mft, argc - kernel - 1, argv + kernel + 1);

    /* The stack starts at the top of guest memory, aligned as right after a
     * call; the word it points at is 0, so returning from the entry function
     * jumps to address 0 and faults (SIGSEGV). */
    seccomp_install(&p);
    spt_launch(l.entry, mem_size - 8, SPT_BOOT_INFO);
}
