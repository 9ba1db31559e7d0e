/* main.c: petrel-hvt, a KVM tender for solo5 hvt unikernels (ABI target hvt,
 * version 2). It does what solo5-hvt does, in solo5-hvt's order (solo5.md
 * §1.8), so that every error appears after the same side effects:
 *
 *   1. pass 1 over the options (--help, --version, find KERNEL)
 *   2. open KERNEL, check the ELF header, ABI note and manifest
 *   3. pass 2: --mem and module options (block files opened, taps attached)
 *   4. SIGTERM/SIGINT handler
 *   5. round and check the memory size
 *   6. /dev/kvm, VM, vCPU, guest memory
 *   7. load the segments
 *   8. GDT and page tables, CPUID, registers, TSC frequency
 *   9. module set-up, then every declared device must be attached
 *  10. boot information, manifest copy, command line
 *  11. refuse READ_IMPLIES_EXEC, install the seccomp filter (sandbox.c)
 *  12. run until the guest halts
 *
 * It offers no ring I/O. From step 11 on it may only make the calls the filter
 * allows: no allocation, no assert, no abort. */
#include <string.h>

#include "args.h"
#include "cli.h"
#include "device_calls.h"
#include "devices.h"
#include "guest.h"
#include "hypercalls.h"
#include "image.h"
#include "kvm.h"
#include "process.h"
#include "sandbox.h"
#include "signals.h"
#include "util.h"

int main(int argc, char *argv[])
{
    const char *slash = argc > 0 ? strrchr(argv[0], '/') : NULL;
    if (argc > 0)
        prog = slash ? slash + 1 : argv[0];
    die_with_parent();
    standard_fds_open();

    int kernel = args_pass1(&hvt_cli, argc, argv);

    struct image img;
    image_open(&img, argv[kernel], &hvt_abi);

    devices_init();
    int64_t mib = args_pass2(&hvt_cli, argc, argv, kernel, &img.mft);

    signals_install();

    struct guest g = {.mem_size = hvt_mem_size(mib)};

    struct vm vm;
    vm_create(&vm, &g);

    struct loaded l;
    const struct load_target t = {.base = (uintptr_t)g.mem, .mem_size = g.mem_size, .host_exec = false};
    image_load(&img, &t, &l);
    g.ro = l.ro;
    g.n_ro = l.n_ro;

    guest_write_tables(&g);
    uint64_t hz = vm_setup_vcpu(&vm, l.entry, g.mem_size);

    hypercalls_init();
    devices_setup_block(&img.mft);
    devices_setup_net(&img.mft);
    devices_check_attached(&img.mft);
    device_calls_register();

    guest_write_boot_info(&g, l.kernel_end, hz, &img.mft, argc - kernel - 1, argv + kernel + 1);

    refuse_read_implies_exec();
    sandbox_install(vm.vcpu);

    return vm_run(&vm, &g);
}
