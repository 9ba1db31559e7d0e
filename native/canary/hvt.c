/* hvt.c: the canary's hvt platform: every service is a hypercall (solo5.md
 * §3.10-§3.11), monotonic time comes from the TSC without an exit. Output is
 * collected by console.c and written with as few PUTS as possible: each exit
 * costs tens of microseconds on kvm-pvm hosts (§5.3). */
#include "canary.h"
#include "hvt.h"

const struct hvt_boot_info *boot;

void plat_init(const void *boot_arg)
{
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

void plat_puts(const char *buf, size_t len)
{
    volatile struct hvt_puts p = {.data = (uint64_t)(uintptr_t)buf, .len = len};
    hvt_call(HVT_PUTS, &p);
}

uint64_t walltime_ns(void)
{
    volatile struct hvt_walltime w = {0};
    hvt_call(HVT_WALLTIME, &w);
    return w.nsecs;
}

static uint64_t rdtsc(void)
{
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}

/* TSC ticks to nanoseconds without 128-bit arithmetic (which would need
 * libgcc): whole seconds, then the remainder, which stays below 2^63. */
uint64_t monotonic_ns(void)
{
    uint64_t t = rdtsc(), f = boot->cpu_cycle_freq;
    return t / f * 1000000000ULL + t % f * 1000000000ULL / f;
}

/* The TSC does not say when the VM began: hardware KVM starts a new vCPU's
 * TSC at 0, but kvm-pvm hosts pass the host's TSC through (it counts from the
 * host's boot), and other hypervisors may do anything. KVM's paravirtual clock
 * does say it: kvmclock counts nanoseconds from the VM's creation, and KVM
 * itself serves it in the kernel (the guest writes an MSR, KVM fills a
 * structure), so it works the same under solo5-hvt as under petrel-hvt. The
 * guest may look for it with CPUID (solo5.md §3.5: the tender installs the
 * host's supported list, which carries KVM's leaves). */
#define CPUID_KVM_SIGNATURE 0x40000000u
#define CPUID_KVM_FEATURES 0x40000001u
#define KVM_FEATURE_CLOCKSOURCE2 (1u << 3)
#define MSR_KVM_SYSTEM_TIME_NEW 0x4b564d01u

struct pvclock {
    uint32_t version; /* odd while KVM updates the rest */
    uint32_t pad0;
    uint64_t tsc_timestamp; /* the guest TSC when system_time was taken */
    uint64_t system_time;   /* nanoseconds since the VM's creation */
    uint32_t tsc_to_system_mul;
    int8_t tsc_shift;
    uint8_t flags;
    uint8_t pad[2];
};
_Static_assert(sizeof(struct pvclock) == 32, "pvclock_vcpu_time_info is 32 bytes");

static void cpuid(uint32_t leaf, uint32_t r[4])
{
    __asm__ __volatile__("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "a"(leaf), "c"(0));
}

static int kvmclock_offered(void)
{
    uint32_t r[4];
    cpuid(CPUID_KVM_SIGNATURE, r);
    /* "KVMKVMKVM\0\0\0" in EBX, ECX, EDX. */
    if (r[0] < CPUID_KVM_FEATURES || r[1] != 0x4b4d564bu || r[2] != 0x564b4d56u || r[3] != 0x4du)
        return 0;
    cpuid(CPUID_KVM_FEATURES, r);
    return (r[0] & KVM_FEATURE_CLOCKSOURCE2) != 0;
}

/* TSC ticks to kvmclock nanoseconds: (ticks shifted) * mul / 2^32, the
 * 96-bit product taken in two halves (no 128-bit arithmetic, no libgcc). */
static uint64_t pvclock_scale(uint64_t ticks, const struct pvclock *c)
{
    if (c->tsc_shift < 0)
        ticks >>= -c->tsc_shift;
    else
        ticks <<= c->tsc_shift;
    uint64_t mul = c->tsc_to_system_mul;
    return (ticks >> 32) * mul + (((ticks & 0xffffffffu) * mul) >> 32);
}

/* Nanoseconds from the VM's creation to the moment the TSC read `tsc`, or
 * UINT64_MAX when the host offers no kvmclock. */
static uint64_t vm_ns_at(uint64_t tsc)
{
    static volatile struct pvclock clock __attribute__((aligned(32)));
    if (!kvmclock_offered())
        return UINT64_MAX;
    uint64_t gpa = (uint64_t)(uintptr_t)&clock | 1; /* bit 0: enable */
    __asm__ __volatile__("wrmsr"
                         :
                         : "c"(MSR_KVM_SYSTEM_TIME_NEW), "a"((uint32_t)gpa), "d"((uint32_t)(gpa >> 32))
                         : "memory");
    struct pvclock c;
    uint32_t v;
    do {
        v = clock.version;
        __asm__ __volatile__("" ::: "memory");
        c.tsc_timestamp = clock.tsc_timestamp;
        c.system_time = clock.system_time;
        c.tsc_to_system_mul = clock.tsc_to_system_mul;
        c.tsc_shift = clock.tsc_shift;
        __asm__ __volatile__("" ::: "memory");
    } while ((v & 1) || v != clock.version);
    /* Switch it off again: nothing else reads it, and KVM need not keep it current. */
    __asm__ __volatile__("wrmsr" : : "c"(MSR_KVM_SYSTEM_TIME_NEW), "a"(0), "d"(0) : "memory");
    if (v == 0)
        return UINT64_MAX; /* KVM never filled it in */
    if (tsc >= c.tsc_timestamp)
        return c.system_time + pvclock_scale(tsc - c.tsc_timestamp, &c);
    uint64_t back = pvclock_scale(c.tsc_timestamp - tsc, &c);
    return back > c.system_time ? 0 : c.system_time - back;
}

/* entry.S read the TSC at the first guest instruction. Without kvmclock the
 * TSC itself is the only clock: right where it started at 0 with the vCPU
 * (hardware KVM), wrong elsewhere. */
uint64_t plat_boot_us(void)
{
    uint64_t tsc = entry_state[ENTRY_TSC], ns = vm_ns_at(tsc);
    if (ns != UINT64_MAX)
        return ns / 1000;
    uint64_t f = boot->cpu_cycle_freq;
    return tsc / f * 1000000ULL + tsc % f * 1000000ULL / f;
}

uint64_t plat_poll(uint64_t timeout_ns)
{
    volatile struct hvt_poll p = {.timeout_nsecs = timeout_ns};
    hvt_call(HVT_POLL, &p);
    return p.ready_set;
}

static int32_t block_call(unsigned n, uint64_t handle, uint64_t offset, const void *data, uint64_t len)
{
    volatile struct hvt_block b = {
        .handle = handle, .offset = offset, .data = (uint64_t)(uintptr_t)data, .len = len};
    hvt_call(n, &b);
    return b.ret;
}

int32_t plat_block_write(uint64_t handle, uint64_t offset, const void *buf, uint64_t len)
{
    return block_call(HVT_BLOCK_WRITE, handle, offset, buf, len);
}

int32_t plat_block_read(uint64_t handle, uint64_t offset, void *buf, uint64_t len)
{
    return block_call(HVT_BLOCK_READ, handle, offset, buf, len);
}

static int32_t net_call(unsigned n, uint64_t handle, const void *data, uint64_t *len)
{
    volatile struct hvt_net a = {.handle = handle, .data = (uint64_t)(uintptr_t)data, .len = *len};
    hvt_call(n, &a);
    *len = a.len;
    return a.ret;
}

int32_t plat_net_write(uint64_t handle, const void *buf, uint64_t len)
{
    return net_call(HVT_NET_WRITE, handle, buf, &len);
}

int32_t plat_net_read(uint64_t handle, void *buf, uint64_t *len)
{
    return net_call(HVT_NET_READ, handle, buf, len);
}

void plat_halt(int status)
{
    volatile struct hvt_halt h = {.cookie = 0, .exit_status = status};
    hvt_call(HVT_HALT, &h);
    /* HALT does not return; if a tender ever resumed us, stay put. */
    for (;;)
        __asm__ __volatile__("pause");
}

/* Out-of-bounds addresses on purpose; the tender must stop the VM with exit 1
 * and its bounds message. Should it not, the canary halts with 3, which no
 * test accepts.
 *   puts   PUTS data just past the end of memory
 *   struct the PUTS structure itself overlapping the end of memory
 *   halt   a HALT cookie whose 512 bytes overrun memory
 *   edge   3 bytes ending on the last byte but one (allowed), then 4 bytes
 *          ending on the last byte (refused: the check is strict, §3.12) */
static _Noreturn void mode_oob(int argc, char **argv)
{
    const char *what = arg(argc, argv, 1, "puts");
    const uint64_t top = boot->mem_size;
    say(what);
    if (str_eq(what, "puts")) {
        volatile struct hvt_puts p = {.data = top, .len = 16};
        hvt_call(HVT_PUTS, &p);
    } else if (str_eq(what, "struct")) {
        hvt_call_addr(HVT_PUTS, top - 8);
    } else if (str_eq(what, "halt")) {
        volatile struct hvt_halt h = {.cookie = top - 256, .exit_status = 0};
        hvt_call(HVT_HALT, &h);
    } else if (str_eq(what, "edge")) {
        volatile struct hvt_puts p = {.data = top - 4, .len = 3};
        hvt_call(HVT_PUTS, &p);
        p.len = 4;
        hvt_call(HVT_PUTS, &p);
    } else {
        halt(2);
    }
    halt(3);
}

const struct mode plat_modes[] = {{"regs", mode_regs}, {"oob", mode_oob}};
const size_t plat_n_modes = sizeof plat_modes / sizeof plat_modes[0];
