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

/* KVM starts the guest TSC at 0 when the vCPU is created; entry.S read it at
 * the first guest instruction. */
uint64_t plat_boot_us(void)
{
    uint64_t tsc = entry_state[ENTRY_TSC], f = boot->cpu_cycle_freq;
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
