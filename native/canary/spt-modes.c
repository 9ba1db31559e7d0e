/* spt-modes.c: the modes only spt has, or has in its own form.
 *   regs       the state the guest starts in: registers saved by entry.S,
 *              selectors, the boot information, each attached device's
 *              descriptor, for comparison with solo5-spt.md §2.4-§2.6.
 *              Control registers and MSRs cannot be read from user mode, so
 *              unlike hvt's regs it does not print them.
 *   oob WHAT   hands write(2) a pointer outside guest memory (puts: just past
 *              its end; null: 0; kernel: a kernel address). The kernel refuses
 *              with EFAULT and the tender is not involved; the canary prints
 *              the result and halts 0 if it was EFAULT, 3 otherwise.
 *   forbidden WHAT
 *              makes a system call the tender's filter does not allow
 *              (solo5-spt.md §4.2); the kernel kills the process with SIGSYS.
 *              If the call returns, the canary says so and halts 3.
 *   fault WHAT touches memory that is not mapped or not allowed (§2.1,
 *              §1.3); the kernel kills the process with SIGSEGV. If it
 *              survives, halt 3. */
#include "canary.h"
#include "spt.h"

#define READ_SEG(s)                                                                                      \
    ({                                                                                                   \
        uint16_t v_;                                                                                     \
        __asm__ __volatile__("mov %%" #s ", %0" : "=r"(v_));                                             \
        v_;                                                                                              \
    })

void mode_regs(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    extern char _start[];
    static const char *const names[16] = {"rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp",
                                          "r8",  "r9",  "r10", "r11", "r12", "r13", "r14", "r15"};
    put_kv("entry", (uint64_t)(uintptr_t)_start);
    for (int i = 0; i < 16; i++)
        put_kv(names[i], entry_state[i]);
    put_kv("rflags", entry_state[ENTRY_RFLAGS]);
    put_kv("cs", READ_SEG(cs));
    put_kv("ss", READ_SEG(ss));
    put_kv("ds", READ_SEG(ds));
    put_kv("es", READ_SEG(es));
    put_kv("fs", READ_SEG(fs));
    put_kv("gs", READ_SEG(gs));
    put_kv("boot.mem_size", boot->mem_size);
    put_kv("boot.kernel_end", boot->kernel_end);
    put_kv("boot.cmdline", boot->cmdline);
    put_kv("boot.mft", boot->mft);
    put_kv("boot.epoll_fd", (uint64_t)boot->epoll_fd);
    put_kv("boot.timer_fd", (uint64_t)boot->timer_fd);
    const struct mft *m = plat_manifest();
    put_kv("mft.version", m->version);
    put_kv("mft.entries", m->entries);
    for (uint32_t i = 0; i < m->entries; i++) {
        uint32_t fd;
        memcpy(&fd, m->e[i].host_private, sizeof fd);
        put_s("mft[");
        put_u(i);
        put_s("]=");
        put_s(m->e[i].name);
        put_s(" attached=");
        put_u(m->e[i].attached);
        put_s(" fd=");
        put_u(fd);
        put_s("\n");
    }
    put_s("cmdline=");
    put_s(plat_cmdline());
    put_s("\n");
    halt(0);
}

void mode_oob(int argc, char **argv)
{
    const char *what = arg(argc, argv, 1, "puts");
    uint64_t addr;
    if (str_eq(what, "puts"))
        addr = boot->mem_size;
    else if (str_eq(what, "null"))
        addr = 0;
    else if (str_eq(what, "kernel"))
        addr = 0xffff800000000000ULL;
    else
        halt(2);
    say(what);
    long r = sys3(SYS_write, 1, (long)addr, 16);
    put_s("petrel-canary oob write=");
    put_i(r);
    put_s(r == -E_FAULT ? " (EFAULT)\n" : "\n");
    halt(r == -E_FAULT ? 0 : 3);
}

/* The storage device's descriptor, capacity and sector size (canary-blk). */
static long storage(uint64_t *capacity, uint16_t *size)
{
    uint64_t h;
    int32_t fd;
    const struct mft_entry *e = device("storage", MFT_BLOCK_BASIC, &h);
    if (e == NULL) {
        say("forbidden no storage device");
        halt(2);
    }
    memcpy(capacity, e->props, 8);
    memcpy(size, e->props + 8, 2);
    memcpy(&fd, e->host_private, sizeof fd);
    return (long)fd;
}

/*   getpid   a call not on the list at all
 *   x32      an allowed call (write) under its x32 number
 *   stderr   write to descriptor 2 (only 1 and taps are allowed)
 *   highfd   write to 1 + 2^32: the filter compares all 64 bits
 *   clock    clock_gettime(CLOCK_PROCESS_CPUTIME_ID)
 *   getfs    arch_prctl(ARCH_GET_FS): the base can be set, never read
 *   open     openat of a host file
 *   short    pread64 of half a sector (canary-blk)
 *   past     pwrite64 of the sector at the capacity (canary-blk)
 * (A whole sector at an unaligned offset inside the device passes the
 * filter, in solo5-spt's as in petrel-spt's: refusing it is the guest's job.) */
void mode_forbidden(int argc, char **argv)
{
    static uint8_t buf[32768];
    static const char path[] = "/etc/hostname";
    struct {
        int64_t s, ns;
    } ts;
    const char *what = arg(argc, argv, 1, "getpid");
    put_s("petrel-canary forbidden ");
    put_s(what);
    put_s("\n");
    flush();
    long r;
    if (str_eq(what, "getpid")) {
        r = sys3(SYS_getpid, 0, 0, 0);
    } else if (str_eq(what, "x32")) {
        r = sys3(0x40000000 | SYS_write, 1, (long)path, 1);
    } else if (str_eq(what, "stderr")) {
        r = sys3(SYS_write, 2, (long)path, 1);
    } else if (str_eq(what, "highfd")) {
        r = sys3(SYS_write, 1L | (1L << 32), (long)path, 1);
    } else if (str_eq(what, "clock")) {
        r = sys3(SYS_clock_gettime, 2, (long)&ts, 0);
    } else if (str_eq(what, "getfs")) {
        uint64_t base;
        r = sys3(SYS_arch_prctl, 0x1003, (long)&base, 0);
    } else if (str_eq(what, "open")) {
        r = sys4(SYS_openat, -100, (long)path, 0, 0);
    } else if (str_eq(what, "short") || str_eq(what, "past")) {
        uint64_t capacity;
        uint16_t size;
        long fd = storage(&capacity, &size);
        if (str_eq(what, "short"))
            r = sys4(SYS_pread64, fd, (long)buf, size / 2, 0);
        else
            r = sys4(SYS_pwrite64, fd, (long)buf, size, (long)capacity);
    } else {
        halt(2);
    }
    put_s("petrel-canary forbidden survived ret=");
    put_i(r);
    put_s("\n");
    halt(3);
}

/*   null   read address 0: nothing below 0x10000 is ever mapped
 *   text   write to the canary's own code (read and execute only)
 *   data   execute the canary's own data (read and write only)
 *   stack  execute code on the stack (not executable without --x-exec-heap) */
void mode_fault(int argc, char **argv)
{
    extern char _start[];
    static uint8_t data_code[4] = {0xc3}; /* ret */
    const char *what = arg(argc, argv, 1, "null");
    say(what);
    void (*fn)(void);
    if (str_eq(what, "null")) {
        volatile uint8_t *p;
        __asm__("" : "=r"(p) : "0"((uintptr_t)0)); /* hide the constant from the optimiser */
        (void)*p;
    } else if (str_eq(what, "text")) {
        volatile uint8_t *p = (volatile uint8_t *)_start;
        *p = 0xc3;
    } else if (str_eq(what, "data")) {
        __asm__("" : "=r"(fn) : "0"(data_code));
        fn();
    } else if (str_eq(what, "stack")) {
        volatile uint8_t code[4] = {0xc3}; /* ret */
        __asm__("" : "=r"(fn) : "0"(code));
        fn();
    } else {
        halt(2);
    }
    say("fault survived");
    halt(3);
}

const struct mode plat_modes[] = {
    {"regs", mode_regs},
    {"oob", mode_oob},
    {"forbidden", mode_forbidden},
    {"fault", mode_fault},
};
const size_t plat_n_modes = sizeof plat_modes / sizeof plat_modes[0];
