/* fake-kvm.so: a test double for /dev/kvm, loaded into petrel-hvt with
 * LD_PRELOAD, so the tender's whole KVM path (set-up, loading, layout, run
 * loop, hypercalls, bounds checks, exits) can be tested on hosts without KVM.
 * It intercepts open("/dev/kvm") and the KVM ioctls; every other descriptor
 * goes to the real libc. KVM_RUN plays a scripted guest instead of running
 * code: each call takes the next step of $FAKEKVM_SCRIPT (steps separated by
 * ';', fields by ','), writes the argument structure into guest memory as a
 * guest would, and reports a VM exit. Results the tender wrote back are
 * appended to $FAKEKVM_LOG at the next KVM_RUN.
 *
 * Steps (numbers in C notation, addresses are guest-physical):
 *   dump                  write the vCPU state and guest layout to $FAKEKVM_DUMP
 *   puts,TEXT             PUTS of TEXT ("\n" is a newline)
 *   putsraw,DATA,LEN      PUTS with this data address and length
 *   hc,N,GPA              OUT of GPA to port 0x500+N (any address, any number)
 *   io,PORT,SIZE,DIR      a port exit (DIR: in or out) carrying the scratch address
 *   walltime              WALLTIME; logs "walltime NS"
 *   poll,NS               POLL; logs "poll ret=R ready=0xS"
 *   bw,H,OFF,LEN,BYTE[,DATA]  BLOCK_WRITE of LEN bytes of BYTE; logs "block ret=R"
 *   br,H,OFF,LEN[,DATA]   BLOCK_READ; logs "block ret=R first=0xB last=0xB"
 *   nw,H,HEX              NET_WRITE of the frame; logs "net ret=R"
 *   nr,H,LEN              NET_READ; logs "net ret=R len=N data=HEX" (no data unless R is 0)
 *   halt,STATUS[,COOKIE]  HALT
 *   sleep                 block in KVM_RUN until a signal, then fail with EINTR
 *   fail,ERRNO            KVM_RUN fails with that errno
 *   exit,REASON[,DETAIL]  any other exit reason (DETAIL: entry failure or suberror)
 * When the script ends, KVM_RUN reports a HLT exit.
 * $FAKEKVM_CPUID sets how many CPUID entries the host "supports" (default 150,
 * more than the tender's first guess of 100, to exercise its E2BIG retry).
 * The tender's seccomp filter goes in before the first KVM_RUN, as with real
 * KVM; see prctl() below for the little the fake adds to it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static int kvm_fd = -1, vm_fd = -1, vcpu_fd = -1;
static struct kvm_run *run;
static uint8_t *mem;
static struct kvm_userspace_memory_region slot;
static struct kvm_sregs sregs;
static struct kvm_regs regs;
static unsigned cpuid_nent;
static char *script, *cursor;
static void (*pending)(void);

#define RUN_SIZE (3 * 4096)

static int real_open(const char *path, int flags, mode_t mode)
{
    static int (*fn)(const char *, int, ...);
    if (fn == NULL)
        fn = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
    return fn(path, flags, mode);
}

static int fake_fd(const char *name, size_t size)
{
    int fd = memfd_create(name, MFD_CLOEXEC);
    if (fd >= 0 && size > 0 && ftruncate(fd, (off_t)size) != 0)
        abort();
    return fd;
}

int open(const char *path, int flags, ...)
{
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) {
        va_list ap;
        va_start(ap, flags);
        mode = va_arg(ap, mode_t);
        va_end(ap);
    }
    if (strcmp(path, "/dev/kvm") == 0)
        return kvm_fd = fake_fd("fake-kvm", 0);
    return real_open(path, flags, mode);
}

int open64(const char *path, int flags, ...) __attribute__((alias("open")));

/* The tender's seccomp filter is in place by the first KVM_RUN, so everything
 * the fake does from there on must be a call that filter allows or one the
 * prefix of prctl() below adds: writes to the log and dump descriptors opened
 * before it, pread of /proc/self/maps, pause. Hence no stdio, no malloc. */
static int log_fd = -1, dump_fd = -1, maps_fd = -1;
static int prepared;

static void write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

static void logf_(const char *fmt, ...)
{
    if (log_fd < 0)
        return;
    char line[8192];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof line - 2)
        n = (int)sizeof line - 2;
    line[n++] = '\n';
    write_all(log_fd, line, (size_t)n);
}

/* The dump is composed here and written in one go. */
static char dump_buf[1 << 18];
static size_t dump_len;

static void put(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void put(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(dump_buf + dump_len, sizeof dump_buf - dump_len, fmt, ap);
    va_end(ap);
    if (n > 0)
        dump_len += (size_t)n < sizeof dump_buf - dump_len ? (size_t)n : sizeof dump_buf - dump_len - 1;
}

static uint64_t rd64(uint64_t gpa)
{
    uint64_t v;
    memcpy(&v, mem + gpa, 8);
    return v;
}

static void wr64(uint64_t gpa, uint64_t v)
{
    memcpy(mem + gpa, &v, 8);
}

static int32_t rd32s(uint64_t gpa)
{
    int32_t v;
    memcpy(&v, mem + gpa, 4);
    return v;
}

/* Structures go in the top 64 KiB of guest memory: the stack area, which the
 * loader never protects, like a guest's locals. */
static uint64_t scratch(void)
{
    return slot.memory_size - 0x10000;
}

static uint64_t fnv1a(const uint8_t *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    while (n--) {
        h ^= *p++;
        h *= 0x100000001b3ULL;
    }
    return h;
}

static void seg(const char *name, const struct kvm_segment *s)
{
    put("%s=0x%x\n", name, s->selector);
    put("%s.base=0x%llx\n%s.limit=0x%x\n%s.type=%u\n%s.present=%u\n%s.dpl=%u\n%s.db=%u\n%s.s=%u\n"
               "%s.l=%u\n%s.g=%u\n%s.avl=%u\n%s.unusable=%u\n",
            name, (unsigned long long)s->base, name, s->limit, name, s->type, name, s->present, name, s->dpl,
            name, s->db, name, s->s, name, s->l, name, s->g, name, s->avl, name, s->unusable);
}

/* The same keys as the canary's regs mode where they overlap, so one table of
 * expectations serves both. */
static void dump(void)
{
    if (dump_fd < 0)
        return;
    dump_len = 0;
    put("slot=%u\nslot.flags=0x%x\nslot.guest_phys_addr=0x%llx\nslot.memory_size=0x%llx\n", slot.slot,
            slot.flags, (unsigned long long)slot.guest_phys_addr, (unsigned long long)slot.memory_size);
    put("cpuid.nent=%u\n", cpuid_nent);
    put("cr0=0x%llx\ncr2=0x%llx\ncr3=0x%llx\ncr4=0x%llx\ncr8=0x%llx\nefer=0x%llx\napic_base=0x%llx\n",
            (unsigned long long)sregs.cr0, (unsigned long long)sregs.cr2, (unsigned long long)sregs.cr3,
            (unsigned long long)sregs.cr4, (unsigned long long)sregs.cr8, (unsigned long long)sregs.efer,
            (unsigned long long)sregs.apic_base);
    put("gdtr.base=0x%llx\ngdtr.limit=0x%x\nidtr.base=0x%llx\nidtr.limit=0x%x\n",
            (unsigned long long)sregs.gdt.base, sregs.gdt.limit, (unsigned long long)sregs.idt.base,
            sregs.idt.limit);
    seg("cs", &sregs.cs);
    seg("ds", &sregs.ds);
    seg("es", &sregs.es);
    seg("fs", &sregs.fs);
    seg("gs", &sregs.gs);
    seg("ss", &sregs.ss);
    seg("tr", &sregs.tr);
    seg("ldtr", &sregs.ldt);
    int pending_irq = 0;
    for (size_t i = 0; i < sizeof sregs.interrupt_bitmap / sizeof sregs.interrupt_bitmap[0]; i++)
        pending_irq |= sregs.interrupt_bitmap[i] != 0;
    put("interrupt_bitmap=%d\n", pending_irq);
    const char *names[] = {"rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11",
                           "r12", "r13", "r14", "r15", "rip", "rflags"};
    const __u64 values[] = {regs.rax, regs.rbx, regs.rcx, regs.rdx, regs.rsi, regs.rdi, regs.rbp, regs.rsp, regs.r8,
                            regs.r9,  regs.r10, regs.r11, regs.r12, regs.r13, regs.r14, regs.r15, regs.rip, regs.rflags};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++)
        put("%s=0x%llx\n", names[i], (unsigned long long)values[i]);

    const char *boot[] = {"mem_size", "kernel_end", "cpu_cycle_freq", "cmdline", "mft"};
    for (int i = 0; i < 5; i++)
        put("boot.%s=0x%llx\n", boot[i], (unsigned long long)rd64(0x10000 + 8 * (uint64_t)i));
    uint32_t hf, gf;
    memcpy(&hf, mem + 0x10028, 4);
    memcpy(&gf, mem + 0x1002c, 4);
    put("boot.host_features=0x%x\nboot.guest_features=0x%x\nboot.net_ring=0x%llx\n", hf, gf,
            (unsigned long long)rd64(0x10030));
    uint64_t mft = rd64(0x10020);
    uint32_t version, entries;
    memcpy(&version, mem + mft, 4);
    memcpy(&entries, mem + mft + 4, 4);
    put("mft.version=0x%x\nmft.entries=0x%x\n", version, entries);
    for (uint32_t i = 0; i < entries && i < 64; i++) {
        const uint8_t *e = mem + mft + 8 + 104 * i;
        uint32_t type;
        memcpy(&type, e + 68, 4);
        put("mft[%u].name=%.67s\nmft[%u].type=0x%x\nmft[%u].props=", i, (const char *)e, i, type, i);
        for (int j = 0; j < 16; j++)
            put("%02x", e[72 + j]);
        put("\nmft[%u].host_private=0x%llx\nmft[%u].attached=%u\n", i,
                (unsigned long long)rd64(mft + 8 + 104 * i + 88), i, e[96]);
    }
    put("cmdline=%s\n", (const char *)(mem + rd64(0x10018)));
    for (int i = 0; i < 3; i++)
        put("gdt[%d]=0x%llx\n", i, (unsigned long long)rd64(0x1000 + 8 * (uint64_t)i));
    put("low.fnv1a=0x%llx\n", (unsigned long long)fnv1a(mem + 0x1000, 0x8000));
    uint64_t kend = rd64(0x10008);
    if (kend > 0x100000 && kend <= slot.memory_size)
        put("image.fnv1a=0x%llx\n", (unsigned long long)fnv1a(mem + 0x100000, kend - 0x100000));

    /* Host protections of guest memory, as guest-physical ranges. */
    static char maps[1 << 16];
    size_t got = 0;
    ssize_t n;
    while (maps_fd >= 0 && got < sizeof maps - 1 && (n = pread(maps_fd, maps + got, sizeof maps - 1 - got, (off_t)got)) > 0)
        got += (size_t)n;
    maps[got] = '\0';
    uintptr_t base = (uintptr_t)mem, end = base + slot.memory_size;
    char *save = NULL;
    for (char *line = strtok_r(maps, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        uintptr_t lo, hi;
        char perms[8];
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && lo < end && hi > base)
            put("maps[0x%lx-0x%lx]=%s\n", (unsigned long)(lo - base), (unsigned long)(hi - base), perms);
    }
    write_all(dump_fd, dump_buf, dump_len);
}

static void out(unsigned port, uint64_t value, unsigned size, int dir)
{
    run->exit_reason = KVM_EXIT_IO;
    run->io.direction = (uint8_t)dir;
    run->io.size = (uint8_t)size;
    run->io.port = (uint16_t)port;
    run->io.count = 1;
    run->io.data_offset = 4096;
    uint32_t v = (uint32_t)value;
    memcpy((uint8_t *)run + 4096, &v, 4);
}

static void hypercall(unsigned n, uint64_t gpa)
{
    out(0x500 + n, gpa, 4, KVM_EXIT_IO_OUT);
}

static void report_walltime(void) { logf_("walltime %llu", (unsigned long long)rd64(scratch())); }
static void report_poll(void)
{
    logf_("poll ret=%d ready=0x%llx", rd32s(scratch() + 16), (unsigned long long)rd64(scratch() + 8));
}
static void report_block_write(void) { logf_("block ret=%d", rd32s(scratch() + 32)); }
static void report_block_read(void)
{
    uint64_t len = rd64(scratch() + 24);
    const uint8_t *d = mem + scratch() + 0x1000;
    if (len > 0 && len <= 0x8000)
        logf_("block ret=%d first=0x%02x last=0x%02x", rd32s(scratch() + 32), d[0], d[len - 1]);
    else
        logf_("block ret=%d", rd32s(scratch() + 32));
}
static void report_net_write(void) { logf_("net ret=%d", rd32s(scratch() + 24)); }
static void report_net_read(void)
{
    uint64_t len = rd64(scratch() + 16);
    if (rd32s(scratch() + 24) != 0) {
        logf_("net ret=%d len=%llu", rd32s(scratch() + 24), (unsigned long long)len);
        return;
    }
    char hex[2 * 2048 + 1] = "";
    for (uint64_t i = 0; i < len && i < 2048; i++)
        snprintf(hex + 2 * i, 3, "%02x", mem[scratch() + 0x1000 + i]);
    logf_("net ret=%d len=%llu data=%s", rd32s(scratch() + 24), (unsigned long long)len, hex);
}

static uint64_t num(char **fields, int i)
{
    return fields[i] ? strtoull(fields[i], NULL, 0) : 0;
}

/* Everything that needs a call the tender's filter forbids, done before it is
 * installed (or, if the tender never installs one, before the first step):
 * the script copied and checked, the log, dump and maps descriptors opened. */
static void prepare(void)
{
    if (prepared)
        return;
    prepared = 1;
    const char *s = getenv("FAKEKVM_SCRIPT");
    script = strdup(s ? s : "");
    cursor = script;
    static const char *const ops[] = {"dump", "puts", "putsraw", "hc", "io", "walltime", "poll", "bw", "br",
                                      "nw", "nr", "halt", "sleep", "fail", "exit"};
    for (const char *p = script; *p;) {
        size_t n = strcspn(p, ",;"), known = 0;
        for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
            known |= strlen(ops[i]) == n && strncmp(ops[i], p, n) == 0;
        if (!known) {
            fprintf(stderr, "fake-kvm: unknown step %.*s\n", (int)n, p);
            abort();
        }
        p += strcspn(p, ";");
        p += *p == ';';
    }
    const char *log = getenv("FAKEKVM_LOG"), *dump = getenv("FAKEKVM_DUMP");
    if (log)
        log_fd = real_open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (dump) {
        dump_fd = real_open(dump, O_WRONLY | O_TRUNC | O_CREAT | O_CLOEXEC, 0644);
        maps_fd = real_open("/proc/self/maps", O_RDONLY | O_CLOEXEC, 0);
    }
}

/* One scripted step: returns 0 with an exit in *run, or -1 with errno. */
static int step(void)
{
    if (pending) {
        pending();
        pending = NULL;
    }
    prepare();
    char *tok = cursor && *cursor ? strsep(&cursor, ";") : NULL;
    if (tok == NULL) {
        run->exit_reason = KVM_EXIT_HLT;
        return 0;
    }
    char *fields[8] = {0};
    for (int i = 0; i < 8 && tok; i++)
        fields[i] = strsep(&tok, ",");
    const char *op = fields[0];
    const uint64_t s = scratch(), data = s + 0x1000;

    if (strcmp(op, "dump") == 0) {
        dump();
        return step();
    }
    if (strcmp(op, "puts") == 0) {
        size_t n = 0;
        for (const char *p = fields[1] ? fields[1] : ""; *p; p++) {
            char c = *p;
            if (c == '\\' && p[1] == 'n')
                c = '\n', p++;
            mem[data + n++] = (uint8_t)c;
        }
        wr64(s, data);
        wr64(s + 8, n);
        hypercall(2, s);
    } else if (strcmp(op, "putsraw") == 0) {
        wr64(s, num(fields, 1));
        wr64(s + 8, num(fields, 2));
        hypercall(2, s);
    } else if (strcmp(op, "hc") == 0) {
        hypercall((unsigned)num(fields, 1), num(fields, 2));
    } else if (strcmp(op, "io") == 0) {
        out((unsigned)num(fields, 1), s, (unsigned)num(fields, 2),
            fields[3] && strcmp(fields[3], "in") == 0 ? KVM_EXIT_IO_IN : KVM_EXIT_IO_OUT);
    } else if (strcmp(op, "walltime") == 0) {
        wr64(s, 0);
        hypercall(1, s);
        pending = report_walltime;
    } else if (strcmp(op, "poll") == 0) {
        wr64(s, num(fields, 1));
        wr64(s + 8, 0xdead);
        memset(mem + s + 16, 0xff, 4);
        hypercall(3, s);
        pending = report_poll;
    } else if (strcmp(op, "bw") == 0 || strcmp(op, "br") == 0) {
        int write = op[1] == 'w';
        const char *at = fields[write ? 5 : 4];
        wr64(s, num(fields, 1));
        wr64(s + 8, num(fields, 2));
        wr64(s + 16, at ? strtoull(at, NULL, 0) : data);
        wr64(s + 24, num(fields, 3));
        memset(mem + s + 32, 0xff, 4);
        uint64_t len = num(fields, 3) <= 0x8000 ? num(fields, 3) : 0;
        memset(mem + data, write ? (int)num(fields, 4) : 0xee, len);
        hypercall(write ? 4 : 5, s);
        pending = write ? report_block_write : report_block_read;
    } else if (strcmp(op, "nw") == 0) {
        const char *hex = fields[2] ? fields[2] : "";
        size_t n = 0;
        for (; hex[0] && hex[1]; hex += 2) {
            char b[3] = {hex[0], hex[1], 0};
            mem[data + n++] = (uint8_t)strtoul(b, NULL, 16);
        }
        wr64(s, num(fields, 1));
        wr64(s + 8, data);
        wr64(s + 16, n);
        memset(mem + s + 24, 0xff, 4);
        hypercall(6, s);
        pending = report_net_write;
    } else if (strcmp(op, "nr") == 0) {
        wr64(s, num(fields, 1));
        wr64(s + 8, data);
        wr64(s + 16, num(fields, 2));
        memset(mem + s + 24, 0xff, 4);
        hypercall(7, s);
        pending = report_net_read;
    } else if (strcmp(op, "halt") == 0) {
        wr64(s, num(fields, 2));
        int32_t st = (int32_t)strtol(fields[1] ? fields[1] : "0", NULL, 0);
        memcpy(mem + s + 8, &st, 4);
        hypercall(8, s);
    } else if (strcmp(op, "sleep") == 0) {
        pause();
        errno = EINTR;
        return -1;
    } else if (strcmp(op, "fail") == 0) {
        errno = (int)num(fields, 1);
        return -1;
    } else if (strcmp(op, "exit") == 0) {
        run->exit_reason = (uint32_t)num(fields, 1);
        if (run->exit_reason == KVM_EXIT_FAIL_ENTRY)
            run->fail_entry.hardware_entry_failure_reason = num(fields, 2);
        if (run->exit_reason == KVM_EXIT_INTERNAL_ERROR)
            run->internal.suberror = (uint32_t)num(fields, 2);
    } else {
        /* Unreachable: prepare() checked every step's name. */
        _exit(127);
    }
    return 0;
}

static int kvm_ioctl(unsigned long req, void *arg)
{
    switch (req) {
    case KVM_GET_API_VERSION:
        return KVM_API_VERSION;
    case KVM_CREATE_VM:
        return vm_fd = fake_fd("fake-kvm-vm", 0);
    case KVM_GET_VCPU_MMAP_SIZE:
        return RUN_SIZE;
    case KVM_CHECK_EXTENSION:
        return 1;
    case KVM_GET_SUPPORTED_CPUID: {
        struct kvm_cpuid2 *c = arg;
        const char *env = getenv("FAKEKVM_CPUID");
        unsigned want = env ? (unsigned)atoi(env) : 150;
        if (c->nent < want) {
            errno = E2BIG;
            return -1;
        }
        c->nent = want;
        memset(c->entries, 0, want * sizeof c->entries[0]);
        return 0;
    }
    }
    errno = EINVAL;
    return -1;
}

static int vm_ioctl(unsigned long req, void *arg)
{
    switch (req) {
    case KVM_CREATE_VCPU:
        vcpu_fd = fake_fd("fake-kvm-vcpu", RUN_SIZE);
        run = mmap(NULL, RUN_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu_fd, 0);
        if (run == MAP_FAILED)
            abort();
        return vcpu_fd;
    case KVM_SET_USER_MEMORY_REGION:
        slot = *(struct kvm_userspace_memory_region *)arg;
        mem = (uint8_t *)(uintptr_t)slot.userspace_addr;
        return 0;
    case KVM_CHECK_EXTENSION:
        return 1;
    }
    errno = EINVAL;
    return -1;
}

static int vcpu_ioctl(unsigned long req, void *arg)
{
    switch (req) {
    case KVM_SET_CPUID2:
        cpuid_nent = ((struct kvm_cpuid2 *)arg)->nent;
        return 0;
    case KVM_SET_SREGS:
        sregs = *(struct kvm_sregs *)arg;
        return 0;
    case KVM_SET_REGS:
        regs = *(struct kvm_regs *)arg;
        return 0;
    case KVM_GET_REGS:
        *(struct kvm_regs *)arg = regs;
        return 0;
    case KVM_GET_TSC_KHZ:
        return 2596150;
    case KVM_RUN:
        return step();
    }
    errno = EINVAL;
    return -1;
}

/* The tender's filter (tender/sandbox.c) goes in through prctl: prepare
 * first, then install it behind a prefix that allows the fake's own calls,
 * and only those (on x86_64): write to the log and dump descriptors, pread of
 * /proc/self/maps, pause for the sleep step. Everything else the tender does is
 * judged by its own filter, unchanged. */
int prctl(int option, ...)
{
    va_list ap;
    va_start(ap, option);
    unsigned long a2 = va_arg(ap, unsigned long), a3 = va_arg(ap, unsigned long);
    unsigned long a4 = va_arg(ap, unsigned long), a5 = va_arg(ap, unsigned long);
    va_end(ap);
    static int (*real)(int, ...);
    if (real == NULL)
        real = (int (*)(int, ...))dlsym(RTLD_NEXT, "prctl");
    if (option != PR_SET_SECCOMP || a2 != SECCOMP_MODE_FILTER)
        return real(option, a2, a3, a4, a5);
    prepare();
    const struct sock_fprog *theirs = (const struct sock_fprog *)a3;
    struct sock_filter pre[32];
    unsigned n = 0;
    const struct {
        int nr, fd;
    } own[] = {{__NR_write, log_fd}, {__NR_write, dump_fd}, {__NR_pread64, maps_fd}};
    pre[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
    unsigned arch_check = n++;
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++) {
        if (own[i].fd < 0)
            continue;
        pre[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
        pre[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)own[i].nr, 0, 3);
        pre[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args));
        pre[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)own[i].fd, 0, 1);
        pre[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    }
    pre[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
    pre[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_pause, 0, 1);
    pre[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    pre[arch_check] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0,
                                                   (uint8_t)(n - arch_check - 1));
    struct sock_filter *all = malloc((n + theirs->len) * sizeof *all);
    if (all == NULL)
        abort();
    memcpy(all, pre, n * sizeof *all);
    memcpy(all + n, theirs->filter, theirs->len * sizeof *all);
    struct sock_fprog fp = {.len = (unsigned short)(n + theirs->len), .filter = all};
    return real(option, a2, (unsigned long)&fp, a4, a5);
}

int ioctl(int fd, unsigned long req, ...)
{
    va_list ap;
    va_start(ap, req);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    if (fd >= 0 && fd == kvm_fd)
        return kvm_ioctl(req, arg);
    if (fd >= 0 && fd == vm_fd)
        return vm_ioctl(req, arg);
    if (fd >= 0 && fd == vcpu_fd)
        return vcpu_ioctl(req, arg);
    static int (*real)(int, unsigned long, ...);
    if (real == NULL)
        real = (int (*)(int, unsigned long, ...))dlsym(RTLD_NEXT, "ioctl");
    return real(fd, req, arg);
}
