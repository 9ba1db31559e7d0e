/* kvm.c: everything that talks to /dev/kvm. The order of calls is solo5-hvt's
 * (CPUID, then SREGS, then REGS; §3.16 and §6: KVM is not promised to accept
 * EFER.LME before CPUID is set). No irqchip, PIT, TSS or identity map: the
 * guest never receives an interrupt. */
#include "kvm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hypercalls.h"
#include "util.h"

void vm_create(struct vm *vm, struct guest *g)
{
    vm->kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
    if (vm->kvm < 0)
        die_errno("Could not open: /dev/kvm");
    int v = ioctl(vm->kvm, KVM_GET_API_VERSION, 0);
    if (v < 0)
        die_errno("KVM: ioctl (GET_API_VERSION) failed");
    if (v != KVM_API_VERSION)
        die("KVM: API version is %d, %s requires version %d", v, prog, KVM_API_VERSION);
    vm->fd = ioctl(vm->kvm, KVM_CREATE_VM, 0);
    if (vm->fd < 0)
        die_errno("KVM: ioctl (CREATE_VM) failed");
    vm->vcpu = ioctl(vm->fd, KVM_CREATE_VCPU, 0);
    if (vm->vcpu < 0)
        die_errno("KVM: ioctl (CREATE_VCPU) failed");
    int size = ioctl(vm->kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
    if (size < 0)
        die_errno("KVM: ioctl (GET_VCPU_MMAP_SIZE) failed");
    if ((size_t)size < sizeof(struct kvm_run))
        die("KVM: invalid VCPU_MMAP_SIZE: %d", size);
    vm->run = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, vm->vcpu, 0);
    if (vm->run == MAP_FAILED)
        die_errno("KVM: VCPU mmap failed");
    int cap = ioctl(vm->kvm, KVM_CHECK_EXTENSION, KVM_CAP_USER_MEMORY);
    if (cap < 0)
        die_errno("KVM: ioctl (KVM_CHECK_EXTENSION) failed");
    if (cap != 1)
        die("KVM: host does not support KVM_CAP_USER_MEMORY");

    /* Shared anonymous memory is zero-filled and committed lazily: the tender's
     * RSS follows what the guest touches, not --mem (§5.4). */
    g->mem = mmap(NULL, g->mem_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (g->mem == MAP_FAILED)
        die_errno("Error allocating guest memory");
    struct kvm_userspace_memory_region region = {
        .slot = 0,
        .flags = 0,
        .guest_phys_addr = 0,
        .memory_size = g->mem_size,
        .userspace_addr = (uint64_t)(uintptr_t)g->mem,
    };
    if (ioctl(vm->fd, KVM_SET_USER_MEMORY_REGION, &region) < 0)
        die_errno("KVM: ioctl (SET_USER_MEMORY_REGION) failed");
    /* Step 9 (KVM_CAP_IOEVENTFD) is only for ring I/O, which this tender
     * does not offer. */
}

static void set_cpuid(struct vm *vm)
{
    /* Whatever the host supports, unchanged. Start where solo5 does (100
     * entries) and grow on E2BIG rather than fail on larger hosts. */
    for (unsigned nent = 100; nent <= 6400; nent *= 2) {
        size_t sz = sizeof(struct kvm_cpuid2) + nent * sizeof(struct kvm_cpuid_entry2);
        struct kvm_cpuid2 *c = calloc(1, sz);
        if (c == NULL)
            die_errno("KVM: could not allocate CPUID entries");
        c->nent = nent;
        if (ioctl(vm->kvm, KVM_GET_SUPPORTED_CPUID, c) < 0) {
            int e = errno;
            free(c);
            if (e == E2BIG)
                continue;
            errno = e;
            die_errno("KVM: ioctl (GET_SUPPORTED_CPUID) failed");
        }
        if (ioctl(vm->vcpu, KVM_SET_CPUID2, c) < 0)
            die_errno("KVM: ioctl (SET_CPUID2) failed");
        free(c);
        return;
    }
    errno = E2BIG;
    die_errno("KVM: ioctl (GET_SUPPORTED_CPUID) failed");
}

#define CR0_PE 0x1ULL
#define CR0_NE 0x20ULL
#define CR0_WP 0x10000ULL
#define CR0_PG 0x80000000ULL
#define CR4_PAE 0x20ULL
#define CR4_OSFXSR 0x200ULL
#define CR4_OSXMMEXCPT 0x400ULL
#define EFER_LME 0x100ULL
#define EFER_LMA 0x400ULL

static void set_sregs(struct vm *vm)
{
    /* Zero-filled, then only what §3.5 lists: APIC base, CR2, CR8, the
     * interrupt bitmap and every unlisted field stay 0, as in solo5. */
    struct kvm_sregs s;
    memset(&s, 0, sizeof s);
    s.cr0 = CR0_PE | CR0_NE | CR0_WP | CR0_PG;
    s.cr3 = GUEST_PML4;
    s.cr4 = CR4_PAE | CR4_OSFXSR | CR4_OSXMMEXCPT;
    s.efer = EFER_LME | EFER_LMA;

    /* Hidden segment state, matching the GDT descriptors written at 0x1000. */
    const struct kvm_segment code = {
        .base = 0, .limit = 0xffffffff, .selector = 0x08, .type = 9,
        .present = 1, .dpl = 0, .db = 0, .s = 1, .l = 1, .g = 1,
    };
    const struct kvm_segment data = {
        .base = 0, .limit = 0xffffffff, .selector = 0x10, .type = 3,
        .present = 1, .dpl = 0, .db = 1, .s = 1, .l = 0, .g = 1,
    };
    s.cs = code;
    s.ss = s.ds = s.es = s.fs = s.gs = data;
    /* A present busy 64-bit TSS and an unusable LDT: what VM entry in long
     * mode insists on, even though the guest has neither. */
    s.tr = (struct kvm_segment){.type = 11, .present = 1};
    s.ldt = (struct kvm_segment){.unusable = 1};
    s.gdt.base = GUEST_GDT;
    s.gdt.limit = 0x17;
    s.idt.base = 0;
    s.idt.limit = 0;
    if (ioctl(vm->vcpu, KVM_SET_SREGS, &s) < 0)
        die_errno("KVM: ioctl (SET_SREGS) failed");
}

static uint64_t tsc_hz(struct vm *vm)
{
    int cap = ioctl(vm->kvm, KVM_CHECK_EXTENSION, KVM_CAP_GET_TSC_KHZ);
    if (cap <= 0)
        die("KVM: host does not support KVM_CAP_GET_TSC_KHZ");
    int khz = ioctl(vm->vcpu, KVM_GET_TSC_KHZ, 0);
    if (khz < 0) {
        if (errno == EIO)
            die("KVM: host TSC is unstable, cannot continue");
        die_errno("KVM: ioctl (KVM_GET_TSC_KHZ) failed");
    }
    /* Guests divide by it at start: zero would be a divide error (§3.15). */
    if (khz == 0)
        die("KVM: host TSC is unstable, cannot continue");
    return (uint64_t)khz * 1000;
}

uint64_t vm_setup_vcpu(struct vm *vm, uint64_t entry, uint64_t mem_size)
{
    set_cpuid(vm);
    set_sregs(vm);
    uint64_t hz = tsc_hz(vm);

    struct kvm_regs r;
    memset(&r, 0, sizeof r);
    r.rip = entry;
    /* As at a System V function entry after a call: RSP + 8 is 16-aligned. */
    r.rsp = mem_size - 8;
    r.rdi = GUEST_BOOT_INFO;
    r.rflags = 0x2; /* only the always-one bit: interrupts off */
    if (ioctl(vm->vcpu, KVM_SET_REGS, &r) < 0)
        die_errno("KVM: ioctl (SET_REGS) failed");
    return hz;
}

static uint64_t rip(struct vm *vm)
{
    struct kvm_regs r;
    if (ioctl(vm->vcpu, KVM_GET_REGS, &r) < 0)
        return 0;
    return r.rip;
}

int vm_run(struct vm *vm, const struct guest *g)
{
    struct kvm_run *run = vm->run;
    for (;;) {
        if (ioctl(vm->vcpu, KVM_RUN, 0) < 0) {
            /* Only SIGTERM/SIGINT are handled, and they exit in the handler;
             * anything else that interrupts KVM_RUN just resumes the guest. */
            if (errno == EINTR)
                continue;
            if (errno == EFAULT)
                die("KVM: host/guest translation fault: rip=0x%llx", (unsigned long long)rip(vm));
            die_errno("KVM: ioctl (RUN) failed");
        }
        switch (run->exit_reason) {
        case KVM_EXIT_IO: {
            unsigned port = run->io.port;
            /* Only a single 32-bit OUT to 0x500-0x508 is a hypercall; a string OUT
             * (count > 1) would carry several addresses and is refused too. */
            if (run->io.direction != KVM_EXIT_IO_OUT || run->io.size != 4 || run->io.count != 1 ||
                port < HC_PORT_BASE || port > HC_PORT_BASE + HC_MAX)
                die("Invalid guest port access: port=0x%x", port);
            uint32_t gpa;
            memcpy(&gpa, (uint8_t *)run + run->io.data_offset, sizeof gpa);
            unsigned n = port - HC_PORT_BASE;
            if (n == HC_HALT)
                return hypercall_halt(g, gpa);
            hypercall(g, n, gpa);
            break;
        }
        case KVM_EXIT_FAIL_ENTRY:
            die("KVM: entry failure: hw_entry_failure_reason=0x%llx",
                (unsigned long long)run->fail_entry.hardware_entry_failure_reason);
        case KVM_EXIT_INTERNAL_ERROR:
            die("KVM: internal error exit: suberror=0x%x", run->internal.suberror);
        default:
            die("KVM: unhandled exit: exit_reason=0x%x, rip=0x%llx", run->exit_reason,
                (unsigned long long)rip(vm));
        }
    }
}
