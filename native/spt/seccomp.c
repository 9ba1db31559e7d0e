/* seccomp.c: solo5-spt's allow-list (solo5-spt.md §4), the same calls with
 * the same argument checks, as a classic BPF program written by hand (no
 * libseccomp). Layout:
 *
 *   architecture must be x86_64 and the number not an x32 one, else KILL
 *   for each allowed system call:  if nr == N, run its alternatives
 *       alternative: checks that fall through to ALLOW, or leave to the next
 *       after the last alternative: KILL
 *   KILL
 *
 * Every argument is compared as a full 64-bit value, as solo5-spt's filter
 * does: the high word must match too (a descriptor 1 + 2^32 is not 1). The
 * kill action is the process, not the thread (§4.1 allows it; the status,
 * SIGSYS, is the same). */
#include "seccomp.h"

#include <asm/prctl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "devices.h"
#include "util.h"

#define MAX_INSNS 4096 /* BPF_MAXINSNS */
#define X32_SYSCALL_BIT 0x40000000u

static struct sock_filter filter[MAX_INSNS];
static unsigned len;

static unsigned emit(uint16_t code, uint8_t jt, uint8_t jf, uint32_t k)
{
    if (len == MAX_INSNS)
        die("Could not build the seccomp filter: more than %d instructions", MAX_INSNS);
    filter[len] = (struct sock_filter){.code = code, .jt = jt, .jf = jf, .k = k};
    return len++;
}

#define OFF_NR offsetof(struct seccomp_data, nr)
#define OFF_ARCH offsetof(struct seccomp_data, arch)
#define ARG_LO(i) ((uint32_t)(offsetof(struct seccomp_data, args) + 8 * (i)))
#define ARG_HI(i) (ARG_LO(i) + 4)

static void load(uint32_t off)
{
    emit(BPF_LD | BPF_W | BPF_ABS, 0, 0, off);
}

static void ret(uint32_t action)
{
    emit(BPF_RET | BPF_K, 0, 0, action);
}

/* The jumps that leave the current alternative: patched to land just after
 * its ALLOW, on the next alternative (or the final KILL). */
static unsigned out_jt[16], out_jf[16], n_jt, n_jf;

static void alt_begin(void)
{
    n_jt = n_jf = 0;
}

/* Go on if A <op> k holds, leave the alternative otherwise. */
static void require(uint16_t op, uint32_t k)
{
    out_jf[n_jf++] = emit(BPF_JMP | op | BPF_K, 0, 0, k);
}

/* Leave the alternative if A <op> k holds, go on otherwise. */
static void refuse_if(uint16_t op, uint32_t k)
{
    out_jt[n_jt++] = emit(BPF_JMP | op | BPF_K, 0, 0, k);
}

static void alt_end(void)
{
    ret(SECCOMP_RET_ALLOW);
    for (unsigned i = 0; i < n_jf; i++)
        filter[out_jf[i]].jf = (uint8_t)(len - out_jf[i] - 1);
    for (unsigned i = 0; i < n_jt; i++)
        filter[out_jt[i]].jt = (uint8_t)(len - out_jt[i] - 1);
}

/* Argument i, as a full 64-bit value, equals v. */
static void arg_eq(unsigned i, uint64_t v)
{
    load(ARG_HI(i));
    require(BPF_JEQ, (uint32_t)(v >> 32));
    load(ARG_LO(i));
    require(BPF_JEQ, (uint32_t)v);
}

/* Argument i, as a full 64-bit value, is at most max. */
static void arg_le64(unsigned i, uint64_t max)
{
    const uint32_t hi = (uint32_t)(max >> 32), lo = (uint32_t)max;
    load(ARG_HI(i));
    refuse_if(BPF_JGT, hi);
    /* A high word below max's: the low word does not matter; skip its test. */
    emit(BPF_JMP | BPF_JEQ | BPF_K, 0, 2, hi);
    load(ARG_LO(i));
    refuse_if(BPF_JGT, lo);
}

/* The group of alternatives for system call nr; returns where its skip jump
 * is, for group_end. */
static unsigned group_begin(uint32_t nr)
{
    load(OFF_NR);
    emit(BPF_JMP | BPF_JEQ | BPF_K, 1, 0, nr);
    return emit(BPF_JMP | BPF_JA, 0, 0, 0);
}

static void group_end(unsigned skip)
{
    ret(SECCOMP_RET_KILL_PROCESS);
    filter[skip].k = len - skip - 1;
}

static void allow_fds(uint32_t nr, const int *fds, unsigned n)
{
    unsigned g = group_begin(nr);
    for (unsigned i = 0; i < n; i++) {
        alt_begin();
        arg_eq(0, (uint64_t)fds[i]);
        alt_end();
    }
    group_end(g);
}

/* pread64/pwrite64(fd, buf, count, offset): count is the sector size and
 * offset at most capacity - sector size. Like solo5-spt's filter, it does not
 * require the offset to be a multiple of the sector size; solo5's bindings
 * refuse such requests before any call (§3.4). */
static void allow_block_io(uint32_t nr)
{
    unsigned g = group_begin(nr);
    for (unsigned i = 0; i < MFT_MAX_ENTRIES; i++) {
        const struct device *d = &devices[i];
        if (d->kind != MFT_BLOCK_BASIC || d->fd < 0)
            continue;
        alt_begin();
        arg_eq(0, (uint64_t)d->fd);
        arg_eq(2, d->block_size);
        arg_le64(3, d->capacity - d->block_size);
        alt_end();
    }
    group_end(g);
}

void seccomp_install(const struct poll_fds *p)
{
    int taps[MFT_MAX_ENTRIES + 1];
    unsigned handles[MFT_MAX_ENTRIES];
    unsigned n_taps = net_pollable(taps, handles);

    len = 0;
    load(OFF_ARCH);
    emit(BPF_JMP | BPF_JEQ | BPF_K, 1, 0, AUDIT_ARCH_X86_64);
    ret(SECCOMP_RET_KILL_PROCESS);
    load(OFF_NR);
    emit(BPF_JMP | BPF_JGE | BPF_K, 0, 1, X32_SYSCALL_BIT);
    ret(SECCOMP_RET_KILL_PROCESS);

    /* Console and frames: write to stdout or a tap; frames in: read a tap. */
    allow_fds(__NR_read, taps, n_taps);
    taps[n_taps] = 1;
    allow_fds(__NR_write, taps, n_taps + 1);
    allow_block_io(__NR_pread64);
    allow_block_io(__NR_pwrite64);
    allow_fds(__NR_epoll_pwait, &p->epoll_fd, 1);
    allow_fds(__NR_timerfd_settime, &p->timer_fd, 1);

    unsigned g = group_begin(__NR_clock_gettime);
    static const uint64_t clocks[] = {CLOCK_REALTIME, CLOCK_MONOTONIC};
    for (unsigned i = 0; i < 2; i++) {
        alt_begin();
        arg_eq(0, clocks[i]);
        alt_end();
    }
    group_end(g);

    /* A thread pointer for the guest's TLS, and the tender's way in (launch.S). */
    g = group_begin(__NR_arch_prctl);
    alt_begin();
    arg_eq(0, ARCH_SET_FS);
    alt_end();
    group_end(g);

    g = group_begin(__NR_exit_group);
    alt_begin();
    alt_end();
    group_end(g);

    ret(SECCOMP_RET_KILL_PROCESS);

    /* Without no_new_privs an unprivileged process may not install a filter;
     * with it, nothing the guest does can gain privileges either. */
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        die_errno("prctl(PR_SET_NO_NEW_PRIVS) failed");
    struct sock_fprog fp = {.len = (unsigned short)len, .filter = filter};
    if (syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fp) != 0)
        die_errno("seccomp(SECCOMP_SET_MODE_FILTER) failed");
}
