/* sandbox.c: petrel-hvt's seccomp filter. solo5-hvt allows 17 system calls
 * with any arguments (solo5.md §1.13); a guest that takes over this tender
 * finds fewer: the 8 calls the run loop and the hypercall handlers make, each
 * with the arguments they make it with, compared as full 64-bit values (a
 * descriptor 1 + 2^32 is not 1, though the kernel would truncate it to 1).
 * No mmap, mprotect, futex, close or rt_sigreturn: after set-up the tender is
 * one thread that allocates nothing, and its one signal handler exits.
 *
 * The allow-list is a table of rules (a system call and its alternatives, each
 * a conjunction of argument tests) compiled to classic BPF; no libseccomp.
 * Program shape:
 *
 *   arch != x86_64 or an x32 number          -> KILL
 *   per rule: nr != rule's                   -> next rule
 *             per alternative: a test fails  -> next alternative
 *                              all hold      -> ALLOW
 *             no alternative held            -> KILL
 *   no rule matched                          -> KILL
 *
 * KILL is SECCOMP_RET_KILL_PROCESS: solo5-hvt kills only the calling thread and
 * can leave a process that never exits (§1.12); this ends the whole tender and
 * its parent sees SIGSYS. */
#include "sandbox.h"

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/kvm.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>

#include "devices.h"
#include "util.h"

#define X32_SYSCALL_BIT 0x40000000u
#define MAX_TESTS 3
#define MAX_ALTS (MFT_MAX_ENTRIES + 2) /* write: stdout, stderr and every tap */
#define MAX_RULES 8
#define MAX_INSNS 4096 /* the kernel's BPF_MAXINSNS */

enum op { EQ, LE };

struct test {
    unsigned arg;
    enum op op;
    uint64_t value;
};

struct alt {
    unsigned n;
    struct test t[MAX_TESTS];
};

struct rule {
    uint32_t nr;
    unsigned n;
    struct alt alts[MAX_ALTS];
};

static struct rule rules[MAX_RULES];
static unsigned n_rules;
static struct sock_filter filter[MAX_INSNS];
static unsigned len;

/* ---- the allow-list ---- */

static struct rule *rule(uint32_t nr)
{
    struct rule *r = &rules[n_rules++];
    *r = (struct rule){.nr = nr};
    return r;
}

static struct alt *alt(struct rule *r)
{
    struct alt *a = &r->alts[r->n++];
    *a = (struct alt){.n = 0};
    return a;
}

static struct alt *test(struct alt *a, unsigned arg, enum op op, uint64_t value)
{
    a->t[a->n++] = (struct test){.arg = arg, .op = op, .value = value};
    return a;
}

static void fd_alts(struct rule *r, uint32_t kind)
{
    for (unsigned i = 0; i < MFT_MAX_ENTRIES; i++)
        if (devices[i].kind == kind && devices[i].fd >= 0)
            test(alt(r), 0, EQ, (uint64_t)devices[i].fd);
}

/* pread64/pwrite64(fd, buf, count, offset) on a block file: the handler has
 * already checked offset + count <= capacity; the filter keeps each inside it. */
static void block_rule(uint32_t nr)
{
    struct rule *r = rule(nr);
    for (unsigned i = 0; i < MFT_MAX_ENTRIES; i++) {
        const struct device *d = &devices[i];
        if (d->kind != MFT_BLOCK_BASIC || d->fd < 0)
            continue;
        struct alt *a = alt(r);
        test(a, 0, EQ, (uint64_t)d->fd);
        test(a, 2, LE, d->capacity);
        test(a, 3, LE, d->capacity);
    }
}

static void allow_list(int vcpu_fd)
{
    n_rules = 0;

    /* The run loop: KVM_RUN, and KVM_GET_REGS for the rip of a failure
     * message. Not the VM or /dev/kvm descriptors, not any other request. */
    struct rule *r = rule(__NR_ioctl);
    test(test(alt(r), 0, EQ, (uint64_t)vcpu_fd), 1, EQ, KVM_RUN);
    test(test(alt(r), 0, EQ, (uint64_t)vcpu_fd), 1, EQ, KVM_GET_REGS);

    /* PUTS on 1, the tender's messages on 2, NET_WRITE on a tap. */
    r = rule(__NR_write);
    test(alt(r), 0, EQ, 1);
    test(alt(r), 0, EQ, 2);
    fd_alts(r, MFT_NET_BASIC);

    r = rule(__NR_read); /* NET_READ */
    fd_alts(r, MFT_NET_BASIC);

    block_rule(__NR_pread64);
    block_rule(__NR_pwrite64);

    /* POLL: at most the taps, and no signal mask swap. */
    unsigned taps = 0;
    for (unsigned i = 0; i < MFT_MAX_ENTRIES; i++)
        taps += devices[i].kind == MFT_NET_BASIC && devices[i].fd >= 0;
    r = rule(__NR_ppoll);
    test(test(alt(r), 1, LE, taps), 3, EQ, 0);

    /* WALLTIME and POLL's deadline, where the vDSO falls back to the kernel. */
    r = rule(__NR_clock_gettime);
    test(alt(r), 0, EQ, CLOCK_REALTIME);
    test(alt(r), 0, EQ, CLOCK_MONOTONIC);

    /* HALT, a failure, or the SIGTERM/SIGINT handler. */
    alt(rule(__NR_exit_group));
}

/* ---- compiling it ---- */

static unsigned emit(uint16_t code, uint8_t jt, uint8_t jf, uint32_t k)
{
    if (len == MAX_INSNS)
        die("Could not build the seccomp filter: more than %d instructions", MAX_INSNS);
    filter[len] = (struct sock_filter){.code = code, .jt = jt, .jf = jf, .k = k};
    return len++;
}

static void ld(uint32_t offset)
{
    emit(BPF_LD | BPF_W | BPF_ABS, 0, 0, offset);
}

#define ARG_LO(i) ((uint32_t)(offsetof(struct seccomp_data, args) + 8 * (i)))
#define ARG_HI(i) (ARG_LO(i) + 4)

/* Jumps out of the alternative being compiled, patched once its end is known:
 * jt or jf of each instruction listed. */
static struct {
    unsigned at;
    int on_true;
} fails[4 * MAX_TESTS];
static unsigned n_fails;

static void fail_if(uint16_t jmp, uint32_t k, int on_true)
{
    fails[n_fails].at = emit(BPF_JMP | jmp | BPF_K, 0, 0, k);
    fails[n_fails++].on_true = on_true;
}

static void compile_test(const struct test *t)
{
    const uint32_t hi = (uint32_t)(t->value >> 32), lo = (uint32_t)t->value;
    ld(ARG_HI(t->arg));
    if (t->op == EQ) {
        fail_if(BPF_JEQ, hi, 0);
        ld(ARG_LO(t->arg));
        fail_if(BPF_JEQ, lo, 0);
        return;
    }
    /* LE: a high word above fails, below passes whatever the low word. */
    fail_if(BPF_JGT, hi, 1);
    emit(BPF_JMP | BPF_JEQ | BPF_K, 0, 2, hi);
    ld(ARG_LO(t->arg));
    fail_if(BPF_JGT, lo, 1);
}

static void compile_alt(const struct alt *a)
{
    n_fails = 0;
    for (unsigned i = 0; i < a->n; i++)
        compile_test(&a->t[i]);
    emit(BPF_RET | BPF_K, 0, 0, SECCOMP_RET_ALLOW);
    /* A few instructions forward at most: always fits the 8-bit offsets. */
    for (unsigned i = 0; i < n_fails; i++) {
        uint8_t off = (uint8_t)(len - fails[i].at - 1);
        if (fails[i].on_true)
            filter[fails[i].at].jt = off;
        else
            filter[fails[i].at].jf = off;
    }
}

static void compile(void)
{
    len = 0;
    ld(offsetof(struct seccomp_data, arch));
    emit(BPF_JMP | BPF_JEQ | BPF_K, 1, 0, AUDIT_ARCH_X86_64);
    emit(BPF_RET | BPF_K, 0, 0, SECCOMP_RET_KILL_PROCESS);
    ld(offsetof(struct seccomp_data, nr));
    emit(BPF_JMP | BPF_JGE | BPF_K, 0, 1, X32_SYSCALL_BIT);
    emit(BPF_RET | BPF_K, 0, 0, SECCOMP_RET_KILL_PROCESS);

    for (unsigned i = 0; i < n_rules; i++) {
        const struct rule *r = &rules[i];
        ld(offsetof(struct seccomp_data, nr));
        emit(BPF_JMP | BPF_JEQ | BPF_K, 1, 0, r->nr);
        /* A rule's body can be longer than an 8-bit jump: skip it with JA. */
        unsigned skip = emit(BPF_JMP | BPF_JA, 0, 0, 0);
        for (unsigned j = 0; j < r->n; j++)
            compile_alt(&r->alts[j]);
        emit(BPF_RET | BPF_K, 0, 0, SECCOMP_RET_KILL_PROCESS);
        filter[skip].k = len - skip - 1;
    }
    emit(BPF_RET | BPF_K, 0, 0, SECCOMP_RET_KILL_PROCESS);
}

void sandbox_install(int vcpu_fd)
{
    allow_list(vcpu_fd);
    compile();
    /* Required of an unprivileged process (a jailed tender is one); and with
     * it nothing a taken-over tender execs could gain privileges. */
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        die_errno("prctl(PR_SET_NO_NEW_PRIVS) failed");
    /* prctl rather than seccomp(2): one thread needs no TSYNC, and the test
     * double for /dev/kvm (tools/fake-kvm.c) sees the filter go in here. */
    struct sock_fprog fp = {.len = (unsigned short)len, .filter = filter};
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fp, 0, 0) != 0)
        die_errno("prctl(PR_SET_SECCOMP) failed");
}
