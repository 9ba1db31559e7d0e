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
 *  11. refuse READ_IMPLIES_EXEC
 *  12. run until the guest halts
 *
 * It offers no ring I/O and installs no seccomp filter. */
#include <string.h>
#include <sys/personality.h>

#include "args.h"
#include "devices.h"
#include "guest.h"
#include "hypercalls.h"
#include "image.h"
#include "kvm.h"
#include "signals.h"
#include "util.h"

int main(int argc, char *argv[])
{
    const char *slash = argc > 0 ? strrchr(argv[0], '/') : NULL;
    if (argc > 0)
        prog = slash ? slash + 1 : argv[0];
    signals_parent_death();

    int kernel = args_pass1(argc, argv);

    struct image img;
    image_open(&img, argv[kernel]);

    devices_init();
    uint64_t requested = args_pass2(argc, argv, kernel, &img.mft);

    signals_install();

    struct guest g = {.mem_size = args_mem_size(requested)};

    struct vm vm;
    vm_create(&vm, &g);

    uint64_t entry, kernel_end;
    image_load(&img, &g, &entry, &kernel_end);

    guest_write_tables(&g);
    uint64_t hz = vm_setup_vcpu(&vm, entry, g.mem_size);

    hypercalls_init();
    devices_setup(&img.mft);

    guest_write_boot_info(&g, kernel_end, hz, &img.mft, argc - kernel - 1, argv + kernel + 1);

    /* With READ_IMPLIES_EXEC every readable mapping of the tender, guest
     * memory included, would be executable on the host. solo5 refuses too. */
    int persona = personality(0xffffffff);
    if (persona != -1 && (persona & READ_IMPLIES_EXEC))
        die("Cowardly refusing to run with a sys_personality of READ_IMPLIES_EXEC. Please report a bug, "
            "with details of your Linux distribution and GCC version");

    return vm_run(&vm, &g);
}
