/* spt-modes.c: the modes only spt has, or has in its own form.
 *   regs       the state the guest starts in: registers saved by entry.S,
 *              selectors, the boot information, each attached device's
 *              descriptor, for comparison with native/spt/ABI.md. Control
 *              registers and MSRs cannot be read from user mode, so unlike
 *              hvt's regs it does not print them.
 *   oob WHAT   hands write(2) a pointer outside guest memory (puts: just past
 *              its end; null: 0; kernel: a kernel address). The kernel refuses
 *              with EFAULT and the tender is not involved; the canary prints
 *              the result and halts 0 if it was EFAULT, 3 otherwise.
 *   forbidden WHAT
 *              makes a system call the tender's filter does not allow; the
 *              kernel kills the process with SIGSYS. If the call returns, the
 *              canary says so and halts 3.
 *   fault WHAT touches memory the tender protected; the kernel kills the
 *              process with SIGSEGV. If it survives, halt 3. */
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
        uint64_t fd;
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
    uint64_t h, fd;
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
 *   clock    clock_gettime(CLOCK_PROCESS_CPUTIME_ID)
 *   open     openat of a host file
 *   short    pread64 of half a sector (canary-blk)
 *   unaligned pread64 of a sector at half a sector's offset (canary-blk)
 *   past     pwrite64 of the sector at the capacity (canary-blk) */
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
    } else if (str_eq(what, "clock")) {
        r = sys3(SYS_clock_gettime, 2, (long)&ts, 0);
    } else if (str_eq(what, "open")) {
        r = sys4(SYS_openat, -100, (long)path, 0, 0);
    } else if (str_eq(what, "short") || str_eq(what, "unaligned") || str_eq(what, "past")) {
        uint64_t capacity;
        uint16_t size;
        long fd = storage(&capacity, &size);
        if (str_eq(what, "short"))
            r = sys4(SYS_pread64, fd, (long)buf, size / 2, 0);
        else if (str_eq(what, "unaligned"))
            r = sys4(SYS_pread64, fd, (long)buf, size, size / 2);
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

/*   boot   write to the boot information (read-only)
 *   text   write to the canary's own code (read and execute only)
 *   guard  read the first page of guest memory (inaccessible)
 *   stack  execute code on the stack (not executable without --x-exec-heap) */
void mode_fault(int argc, char **argv)
{
    extern char _start[];
    const char *what = arg(argc, argv, 1, "boot");
    say(what);
    volatile uint8_t *p;
    if (str_eq(what, "boot")) {
        p = (volatile uint8_t *)(uintptr_t)SPT_BOOT_INFO;
        *p = 0;
    } else if (str_eq(what, "text")) {
        p = (volatile uint8_t *)_start;
        *p = 0xc3;
    } else if (str_eq(what, "guard")) {
        p = (volatile uint8_t *)(uintptr_t)SPT_MEM_BASE;
        (void)*p;
    } else if (str_eq(what, "stack")) {
        volatile uint8_t code[4] = {0xc3}; /* ret */
        void (*fn)(void);
        __asm__("" : "=r"(fn) : "0"(code));
        fn();
    } else {
        halt(2);
    }
    say("fault survived");
    halt(3);
}
