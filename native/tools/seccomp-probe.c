/* seccomp-probe.so: a TEST TOOL preloaded into the real petrel-hvt (with real
 * KVM, or stacked before fake-kvm.so) to stand for a guest that has taken the
 * tender over. At the first KVM_RUN, when the filter must already be in place,
 * it makes the system call $PETREL_SECCOMP_PROBE names, straight to the kernel
 * (syscall(2), so fake-kvm.so cannot answer it). If the process survives it
 * says "seccomp-probe: WHAT survived" on descriptor 2 and the guest runs on.
 * petrel-hvt itself has no test hook: this is the shipped binary under test.
 *
 * Forbidden (petrel-hvt must die of SIGSYS): getpid, x32 (getpid by its x32
 * number), open, socket, kill, mmap, mprotect, write-kvm (write to the
 * /dev/kvm descriptor), write-high (to 1 + 2^32), vm-ioctl (KVM_CREATE_VCPU
 * on the VM), vcpu-ioctl (KVM_SET_REGS), run-high (KVM_RUN on the vCPU
 * + 2^32), run-kvm (KVM_RUN on /dev/kvm), clock (CLOCK_BOOTTIME), ppoll-mask
 * (a signal mask), ppoll-many (more descriptors than taps), futex,
 * rt_sigreturn. Allowed (controls): stdout, stderr, clock-ok (CLOCK_MONOTONIC),
 * regs (KVM_GET_REGS), ppoll-ok. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <linux/kvm.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int kvm_fd = -1, vm_fd = -1, vcpu_fd = -1, fired;

static void say(const char *what)
{
    char line[128] = "seccomp-probe: ";
    strncat(line, what, 64);
    strcat(line, " survived\n");
    (void)!write(2, line, strlen(line));
}

static void attempt(const char *what)
{
    static struct kvm_regs regs;
    static uint32_t word;
    struct timespec ts;
    struct pollfd none[4];
    const long high = 1L << 32;
    long r = 0;

    if (strcmp(what, "getpid") == 0)
        r = syscall(SYS_getpid);
    else if (strcmp(what, "x32") == 0)
        r = syscall(SYS_getpid | 0x40000000L);
    else if (strcmp(what, "open") == 0)
        r = syscall(SYS_openat, AT_FDCWD, "/etc/hostname", O_RDONLY);
    else if (strcmp(what, "socket") == 0)
        r = syscall(SYS_socket, AF_INET, SOCK_STREAM, 0);
    else if (strcmp(what, "kill") == 0)
        r = syscall(SYS_kill, 1, 0);
    else if (strcmp(what, "mmap") == 0)
        r = syscall(SYS_mmap, 0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    else if (strcmp(what, "mprotect") == 0)
        r = syscall(SYS_mprotect, (long)&regs & ~4095L, 4096, PROT_READ | PROT_WRITE | PROT_EXEC);
    else if (strcmp(what, "write-kvm") == 0)
        r = syscall(SYS_write, kvm_fd, "x", 1);
    else if (strcmp(what, "write-high") == 0)
        r = syscall(SYS_write, high + 1, "x", 1);
    else if (strcmp(what, "vm-ioctl") == 0)
        r = syscall(SYS_ioctl, vm_fd, KVM_CREATE_VCPU, 1);
    else if (strcmp(what, "vcpu-ioctl") == 0)
        r = syscall(SYS_ioctl, vcpu_fd, KVM_SET_REGS, &regs);
    else if (strcmp(what, "run-high") == 0)
        r = syscall(SYS_ioctl, high + vcpu_fd, KVM_RUN, 0);
    else if (strcmp(what, "run-kvm") == 0)
        r = syscall(SYS_ioctl, kvm_fd, KVM_RUN, 0);
    else if (strcmp(what, "clock") == 0)
        r = syscall(SYS_clock_gettime, CLOCK_BOOTTIME, &ts);
    else if (strcmp(what, "ppoll-mask") == 0) {
        sigset_t set;
        sigemptyset(&set);
        ts = (struct timespec){0, 0};
        r = syscall(SYS_ppoll, none, 0, &ts, &set, 8);
    } else if (strcmp(what, "ppoll-many") == 0) {
        ts = (struct timespec){0, 0};
        r = syscall(SYS_ppoll, none, 4, &ts, NULL, 8);
    } else if (strcmp(what, "futex") == 0)
        r = syscall(SYS_futex, &word, FUTEX_WAKE, 1, NULL, NULL, 0);
    else if (strcmp(what, "rt_sigreturn") == 0)
        r = syscall(SYS_rt_sigreturn);
    /* The controls: calls the tender makes itself. */
    else if (strcmp(what, "stdout") == 0)
        r = syscall(SYS_write, 1, "seccomp-probe\n", 14);
    else if (strcmp(what, "stderr") == 0)
        r = syscall(SYS_write, 2, "seccomp-probe\n", 14);
    else if (strcmp(what, "clock-ok") == 0)
        r = syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
    else if (strcmp(what, "regs") == 0)
        r = syscall(SYS_ioctl, vcpu_fd, KVM_GET_REGS, &regs);
    else if (strcmp(what, "ppoll-ok") == 0) {
        ts = (struct timespec){0, 0};
        r = syscall(SYS_ppoll, none, 0, &ts, NULL, 8);
    } else {
        say("unknown attempt, nothing");
        return;
    }
    (void)r;
    say(what);
}

/* Records which descriptor is which (/dev/kvm answers GET_API_VERSION, the VM
 * is what CREATE_VM returned, the vCPU what CREATE_VCPU returned), then passes
 * every call on: to fake-kvm.so if it is preloaded after this, else to libc. */
int ioctl(int fd, unsigned long req, ...)
{
    va_list ap;
    va_start(ap, req);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    static int (*next)(int, unsigned long, ...);
    if (next == NULL)
        next = (int (*)(int, unsigned long, ...))dlsym(RTLD_NEXT, "ioctl");
    if (req == KVM_RUN && !fired) {
        fired = 1;
        const char *what = getenv("PETREL_SECCOMP_PROBE");
        if (what != NULL && *what != '\0')
            attempt(what);
    }
    int r = next(fd, req, arg);
    if (req == KVM_GET_API_VERSION)
        kvm_fd = fd;
    else if (req == KVM_CREATE_VM && r >= 0)
        vm_fd = r;
    else if (req == KVM_CREATE_VCPU && r >= 0)
        vcpu_fd = r;
    return r;
}
