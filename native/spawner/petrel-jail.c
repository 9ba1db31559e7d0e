/* petrel-jail: puts one tender in its jail, then execs it (docs/threat-model.md).
 *
 * Why a program of its own: the holder execs it instead of the tender (the holder's protocol
 * and its vfork stay as they are, so a holder of an earlier release runs jailed tenders too),
 * and the process the holder records, signals and reaps is the tender itself once this execs.
 * It runs as root and, in this order: leaves every descriptor but 0-2; takes its block files (chowned to the jail's
 * id) and image (bound read-only: the store's files are 0444 in a directory only root enters, so
 * the bind is the one way to it, and a tenant's jail holds its own image only); enters new
 * mount, IPC and UTS namespaces, makes every mount private and builds a root on a tmpfs of its
 * own (mounted inside the namespace, so a nodev run directory does not matter) that holds only
 * the files it was given, at the paths the tender was given, plus the device nodes it was
 * allowed (made for this jail, owned by its id; the host's nodes are never touched); joins the
 * cgroups petreld chose (made here, their limits written); pivots
 * into it and makes it read-only; pins the CPUs; sets the resource limits (soft = hard); drops
 * every capability from the bounding and ambient sets, the supplementary groups, then changes
 * to the jail's uid and gid; sets no_new_privs and the parent-death signal again (a change of
 * credentials clears it); installs a system-call filter that refuses every socket but the
 * AF_INET datagram socket tenders use for interface ioctls, and any connect, bind or send on
 * one (so no loopback service, abstract unix socket or netlink is reachable), and io_uring
 * (which could open sockets past the filter); execs the tender with an empty environment.
 *
 * Usage: petrel-jail --id N [--cpus LIST] [--limit as|nproc|nofile|fsize=N]...
 *          [--cgroup-mkdir DIR]... [--cgroup-write FILE=VALUE]... [--cgroup-join DIR]...
 *          [--ro PATH]... [--rw PATH]... [--kvm DEVICE] [--dev tun] [--base DIR]
 *          [--netns FILE]
 *          -- TENDER ARG...
 * Every PATH is absolute and appears at that same path inside the jail. --kvm names the host's
 * KVM device (petreld's kvmDevice, the one its probe opened): the jail gets a node of the same
 * device number at /dev/kvm, where a solo5 tender opens it, so a host whose KVM node lives
 * elsewhere, and a test whose double stands in for KVM, build the same jail. --base is where the
 * jail's tmpfs is mounted inside the namespace (default /tmp; nothing shows outside it);
 * --netns a network namespace to enter first (/run/netns/NAME: tests).
 * Failures before the exec are one line on standard error (the tender's console) and exit 125.
 * `petrel-jail --probe` only prints its uid and gid: the preflight runs it jailed.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define FAIL_STATUS 125
#define MAX_ITEMS 256

static void fail(const char *what, const char *detail)
{
    int saved = errno;
    fprintf(stderr, "petrel-jail: %s%s%s: %s\n", what, detail ? " " : "", detail ? detail : "",
            saved ? strerror(saved) : "invalid");
    fflush(stderr);
    _exit(FAIL_STATUS);
}

static void usage(const char *why)
{
    errno = 0;
    fail("usage", why);
}

struct item {
    char kind; /* 'r' read-only bind, 'w' read-write bind, 'k' the KVM device, 't' /dev/net/tun */
    const char *path; /* on the host */
    int fd; /* 'w': the file, opened and chowned before the namespace */
    dev_t device; /* 'k', 't': the device number, read before the jail's tmpfs can hide it */
};

static struct item items[MAX_ITEMS];
static size_t n_items;
static const char *cg_mkdir[MAX_ITEMS], *cg_write[MAX_ITEMS], *cg_join[MAX_ITEMS];
static size_t n_mkdir, n_write, n_join;

struct limit {
    const char *name;
    int resource;
    rlim_t value;
    int set;
};
static struct limit limits[] = {
    { "as", RLIMIT_AS, 0, 0 },
    { "nproc", RLIMIT_NPROC, 0, 0 },
    { "nofile", RLIMIT_NOFILE, 0, 0 },
    { "fsize", RLIMIT_FSIZE, 0, 0 },
};

static unsigned long number(const char *text, const char *what)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || end == text || *end != '\0' || text[0] == '-')
        usage(what);
    return (unsigned long)v;
}

static void add_item(char kind, const char *path)
{
    if (n_items == MAX_ITEMS)
        usage("too many paths");
    if (path[0] != '/' || strstr(path, "/../") || strcmp(path, "/") == 0)
        usage(path);
    items[n_items++] = (struct item){ kind, path, -1, 0 };
}

/* Writes `text` to an existing file (a cgroup control file). */
static void write_file(const char *file, const char *text)
{
    int fd = open(file, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        fail("open", file);
    size_t len = strlen(text);
    if (write(fd, text, len) != (ssize_t)len)
        fail("write", file);
    close(fd);
}

static void cgroups(void)
{
    for (size_t i = 0; i < n_mkdir; i++)
        if (mkdir(cg_mkdir[i], 0755) != 0 && errno != EEXIST)
            fail("mkdir", cg_mkdir[i]);
    for (size_t i = 0; i < n_write; i++) {
        char file[4096];
        const char *eq = strchr(cg_write[i], '=');
        if (!eq || (size_t)(eq - cg_write[i]) >= sizeof file)
            usage(cg_write[i]);
        memcpy(file, cg_write[i], (size_t)(eq - cg_write[i]));
        file[eq - cg_write[i]] = '\0';
        write_file(file, eq + 1);
    }
    /* v1: through `tasks`, which moves this one thread. A write of 0 ("me") to a thread file
     * skips the kernel's global threadgroup lock, whose write side waits for an RCU grace period:
     * 8-14 ms per tender on a 2-core kvm-pvm host through cgroup.procs. This process has one
     * thread, so the thread is the whole process. v2 has no `tasks` (its cgroup.threads moves a
     * thread only inside a threaded subtree): cgroup.procs there. */
    for (size_t i = 0; i < n_join; i++) {
        char file[4096];
        snprintf(file, sizeof file, "%s/tasks", cg_join[i]);
        if (access(file, W_OK) != 0)
            snprintf(file, sizeof file, "%s/cgroup.procs", cg_join[i]);
        write_file(file, "0");
    }
}

/* Makes every directory of `path` below the current directory (the jail's root). */
static void make_parents(const char *path)
{
    char dir[4096];
    if (strlen(path) >= sizeof dir)
        fail("path too long", path);
    strcpy(dir, path);
    for (char *slash = strchr(dir + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        if (mkdir(dir + 1, 0755) != 0 && errno != EEXIST)
            fail("mkdir", dir);
        *slash = '/';
    }
}

/* A mount point for `source` at `target` (relative to the jail's root): a directory or a file. */
static void mount_point(const char *target, int directory)
{
    make_parents(target - 1);
    if (directory) {
        if (mkdir(target, 0755) != 0 && errno != EEXIST)
            fail("mkdir", target);
    } else {
        int fd = open(target, O_WRONLY | O_CREAT | O_CLOEXEC, 0400);
        if (fd < 0)
            fail("create", target);
        close(fd);
    }
}

static void bind_at(const char *source, const char *target, unsigned long flags)
{
    if (mount(source, target, NULL, MS_BIND | MS_REC, NULL) != 0)
        fail("bind", target - 1);
    if (mount(NULL, target, NULL, MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV | flags, NULL) != 0)
        fail("remount", target - 1);
}

/* Where a device node goes inside the jail: a solo5 tender opens /dev/kvm and /dev/net/tun. */
static const char *device_inside(const struct item *it)
{
    return it->kind == 'k' ? "/dev/kvm" : "/dev/net/tun";
}

/* A node of the host device's number, made for this jail and owned by its id. */
static void device(const struct item *it, uid_t id)
{
    const char *inside = device_inside(it);
    make_parents(inside);
    if (mknod(inside + 1, S_IFCHR | 0600, it->device) != 0 || chown(inside + 1, id, id) != 0)
        fail("mknod", inside);
}

static void build_root(const char *base, uid_t id)
{
    if (sethostname("petrel-tender", 13) != 0)
        fail("sethostname", NULL);
    if (mount("petrel-jail", base, "tmpfs", MS_NOSUID, "mode=0755") != 0)
        fail("mount tmpfs on", base);
    if (chdir(base) != 0)
        fail("chdir", base);
    struct stat null;
    if (stat("/dev/null", &null) != 0)
        fail("stat", "/dev/null");
    make_parents("/dev/null");
    if (mknod("dev/null", S_IFCHR | 0666, null.st_rdev) != 0 || chmod("dev/null", 0666) != 0)
        fail("mknod", "/dev/null");
    for (size_t i = 0; i < n_items; i++) {
        struct item *it = &items[i];
        if (it->kind == 'k' || it->kind == 't') {
            device(it, id);
        } else {
            struct stat st;
            char source[64];
            snprintf(source, sizeof source, "/proc/self/fd/%d", it->fd);
            if (fstat(it->fd, &st) != 0)
                fail("stat", it->path);
            mount_point(it->path + 1, S_ISDIR(st.st_mode));
            bind_at(source, it->path + 1, it->kind == 'r' ? MS_RDONLY : 0);
            close(it->fd);
        }
    }
    /* The cgroups last before the host's file system goes (their directories are in it). */
    cgroups();
    /* The tmpfs becomes /; the old root is detached, so nothing of the host is reachable. */
    if (syscall(SYS_pivot_root, ".", ".") != 0)
        fail("pivot_root", base);
    if (umount2(".", MNT_DETACH) != 0)
        fail("detach the old root", NULL);
    if (chdir("/") != 0)
        fail("chdir", "/");
    if (mount(NULL, "/", NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID, NULL) != 0)
        fail("remount / read-only", NULL);
}

static void pin(const char *list)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    char copy[1024];
    if (strlen(list) >= sizeof copy)
        usage("--cpus");
    strcpy(copy, list);
    for (char *save, *cpu = strtok_r(copy, ",", &save); cpu; cpu = strtok_r(NULL, ",", &save)) {
        unsigned long n = number(cpu, "--cpus");
        if (n >= CPU_SETSIZE)
            usage("--cpus");
        CPU_SET(n, &set);
    }
    if (sched_setaffinity(0, sizeof set, &set) != 0)
        fail("sched_setaffinity", list);
}

static void set_limits(void)
{
    struct rlimit none = { 0, 0 };
    if (setrlimit(RLIMIT_CORE, &none) != 0)
        fail("setrlimit", "core");
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        if (!limits[i].set)
            continue;
        struct rlimit r = { limits[i].value, limits[i].value };
        if (setrlimit(limits[i].resource, &r) != 0)
            fail("setrlimit", limits[i].name);
    }
}

static void drop_privileges(uid_t id)
{
    for (int cap = 0; cap <= 63; cap++)
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL)
            fail("drop capability from the bounding set", NULL);
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL)
        fail("clear ambient capabilities", NULL);
    if (setgroups(0, NULL) != 0)
        fail("setgroups", NULL);
    if (setresgid(id, id, id) != 0)
        fail("setresgid", NULL);
    if (setresuid(id, id, id) != 0)
        fail("setresuid", NULL);
    /* Leaving uid 0 cleared the permitted and effective sets; check rather than trust. */
    struct __user_cap_header_struct head = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct data[2];
    if (syscall(SYS_capget, &head, data) != 0)
        fail("capget", NULL);
    if (data[0].effective | data[0].permitted | data[1].effective | data[1].permitted) {
        errno = EPERM;
        fail("capabilities left after setresuid", NULL);
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        fail("no_new_privs", NULL);
}

#if defined(__x86_64__)
#define JAIL_ARCH AUDIT_ARCH_X86_64
#define X32_BIT 0x40000000u
#elif defined(__aarch64__)
#define JAIL_ARCH AUDIT_ARCH_AARCH64
#define X32_BIT 0u
#else
#error "petrel-jail: unknown architecture for the system-call filter"
#endif

#define LOAD(field) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, field))
#define RETURN(what) BPF_STMT(BPF_RET | BPF_K, (what))

/* Refused with EPERM: every way to a socket but AF_INET datagrams (which can neither connect nor
 * send: the tenders' interface ioctls need one), the calls that would make a
 * new namespace (a user namespace needs no privilege), or reach kernel interfaces a tender never
 * uses. The tender's own filter (petrel-spt, solo5-hvt) is an allow-list installed after this.
 * A jail with networks (/dev/net/tun) also lets the tender ask the kernel for the host's
 * interfaces, as solo5's tenders do (getifaddrs: a NETLINK_ROUTE socket, bind and sendto with a
 * netlink address); see filter(). */
static const unsigned denied[] = {
    __NR_socketpair, __NR_connect, __NR_bind, __NR_listen, __NR_sendto, __NR_sendmsg, __NR_sendmmsg,
    __NR_io_uring_setup, __NR_unshare, __NR_setns, __NR_bpf, __NR_perf_event_open, __NR_keyctl,
    __NR_add_key, __NR_request_key, __NR_userfaultfd, __NR_ptrace, __NR_mount, __NR_umount2,
    __NR_pivot_root, __NR_chroot,
    /* No new process: none survives the tender to meet the next holder of its id. Threads may
     * be made (clone with CLONE_THREAD, see filter(): solo5-hvt runs its network I/O in one);
     * they end with their process, and RLIMIT_NPROC counts them (and the kernel's KVM worker). */
    __NR_fork, __NR_vfork,
};
#define N_DENIED (sizeof denied / sizeof denied[0])

/* A tiny assembler: jumps name a label, resolved once every instruction is placed (BPF jumps go
 * forward only, at most 255 instructions). */
enum label { L_NONE, L_KILL, L_NR, L_DENY, L_ALLOW, L_NOSYS, L_CLONE, L_SOCKET, L_INET, L_NETLINK, L_BIND, L_SENDTO, L_COUNT };
#define MAX_INSNS 96
struct program {
    struct sock_filter insn[MAX_INSNS];
    unsigned char jt[MAX_INSNS], jf[MAX_INSNS]; /* label of each branch, L_NONE: the next one */
    size_t at[L_COUNT], n;
};

static void emit(struct program *p, struct sock_filter f, enum label jt, enum label jf)
{
    if (p->n >= MAX_INSNS) {
        errno = E2BIG;
        fail("system-call filter", NULL);
    }
    p->jt[p->n] = (unsigned char)jt;
    p->jf[p->n] = (unsigned char)jf;
    p->insn[p->n++] = f;
}
#define STMT(code, k) emit(p, (struct sock_filter)BPF_STMT((code), (k)), L_NONE, L_NONE)
#define LOAD_AT(off) STMT(BPF_LD | BPF_W | BPF_ABS, (off))
#define ARG_LOW(i) LOAD_AT(offsetof(struct seccomp_data, args[i])) /* little-endian: the low 32 bits */
#define IF_EQ(k, yes, no) emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (k), 0, 0), (yes), (no))
#define PLACE(label) (p->at[(label)] = p->n)

static void resolve(struct program *p)
{
    for (size_t i = 0; i < p->n; i++) {
        if (BPF_CLASS(p->insn[i].code) != BPF_JMP)
            continue;
        for (int branch = 0; branch < 2; branch++) {
            enum label l = branch ? p->jf[i] : p->jt[i];
            size_t target = l == L_NONE ? i + 1 : p->at[l];
            if (target <= i || target - i - 1 > 255) {
                errno = EINVAL;
                fail("system-call filter layout", NULL);
            }
            if (branch)
                p->insn[i].jf = (unsigned char)(target - i - 1);
            else
                p->insn[i].jt = (unsigned char)(target - i - 1);
        }
    }
}

static void filter(int networks)
{
    static struct program prog;
    struct program *p = &prog;
    LOAD_AT(offsetof(struct seccomp_data, arch));
    IF_EQ(JAIL_ARCH, L_NR, L_KILL);
    PLACE(L_KILL);
    STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
    PLACE(L_NR);
    LOAD_AT(offsetof(struct seccomp_data, nr));
    emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, X32_BIT, 0, 0), L_DENY, L_NONE);
    IF_EQ(__NR_socket, L_SOCKET, L_NONE);
    IF_EQ(__NR_clone, L_CLONE, L_NONE);
    /* Its flags lie in a struct, out of the filter's reach: ENOSYS makes libc use clone. */
    IF_EQ(__NR_clone3, L_NOSYS, L_NONE);
    if (networks) {
        IF_EQ(__NR_bind, L_BIND, L_NONE);
        IF_EQ(__NR_sendto, L_SENDTO, L_NONE);
    }
    for (size_t k = 0; k < N_DENIED; k++)
        IF_EQ(denied[k], L_DENY, L_NONE);
    STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);

    PLACE(L_CLONE);
    ARG_LOW(0); /* the flags (x86-64 and arm64 alike) */
    emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 0, 0), L_ALLOW, L_DENY);
    PLACE(L_SOCKET);
    ARG_LOW(0);
    IF_EQ(AF_INET, L_INET, networks ? L_NONE : L_DENY);
    if (networks)
        IF_EQ(AF_NETLINK, L_NETLINK, L_DENY);
    PLACE(L_INET);
    ARG_LOW(1);
    STMT(BPF_ALU | BPF_AND | BPF_K, 0xf); /* the type without its flags */
    IF_EQ(SOCK_DGRAM, L_ALLOW, L_DENY);
    if (networks) {
        /* Only the routing family, which a process without CAP_NET_ADMIN can read, not change. */
        PLACE(L_NETLINK);
        ARG_LOW(1);
        STMT(BPF_ALU | BPF_AND | BPF_K, 0xf);
        IF_EQ(SOCK_RAW, L_NONE, L_DENY);
        ARG_LOW(2);
        IF_EQ(NETLINK_ROUTE, L_ALLOW, L_DENY);
        /* An address of a netlink socket's length only: an AF_INET socket refuses one that short
         * (EINVAL), so neither binds a port nor sends a datagram anywhere. */
        PLACE(L_BIND);
        ARG_LOW(2);
        IF_EQ(sizeof(struct sockaddr_nl), L_ALLOW, L_DENY);
        PLACE(L_SENDTO);
        ARG_LOW(5);
        IF_EQ(sizeof(struct sockaddr_nl), L_ALLOW, L_DENY);
    }
    PLACE(L_NOSYS);
    STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA));
    PLACE(L_DENY);
    STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA));
    PLACE(L_ALLOW);
    STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    resolve(p);
    struct sock_fprog fprog = { (unsigned short)p->n, p->insn };
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog) != 0)
        fail("seccomp", NULL);
}

int main(int argc, char **argv)
{
    /* The preflight runs petrel-jail jailed and this inside: the whole jail works on this host. */
    if (argc == 2 && strcmp(argv[1], "--probe") == 0) {
        printf("jailed as uid %d gid %d\n", (int)getuid(), (int)getgid());
        return getuid() == 0 ? 1 : 0;
    }
    long id = -1;
    const char *cpus = NULL, *base = "/tmp", *netns = NULL;
    int i = 1, networks = 0;
    for (; i < argc && strcmp(argv[i], "--") != 0; i += 2) {
        const char *opt = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!val)
            usage(opt);
        if (strcmp(opt, "--id") == 0) {
            id = (long)number(val, "--id");
        } else if (strcmp(opt, "--cpus") == 0) {
            cpus = val;
        } else if (strcmp(opt, "--base") == 0) {
            base = val;
        } else if (strcmp(opt, "--netns") == 0) {
            netns = val;
        } else if (strcmp(opt, "--limit") == 0) {
            const char *eq = strchr(val, '=');
            size_t k = 0, n = sizeof limits / sizeof limits[0];
            for (; eq && k < n; k++)
                if (strlen(limits[k].name) == (size_t)(eq - val) && strncmp(limits[k].name, val, (size_t)(eq - val)) == 0)
                    break;
            if (!eq || k == n)
                usage(val);
            limits[k].value = (rlim_t)number(eq + 1, val);
            limits[k].set = 1;
        } else if (strcmp(opt, "--cgroup-mkdir") == 0 && n_mkdir < MAX_ITEMS) {
            cg_mkdir[n_mkdir++] = val;
        } else if (strcmp(opt, "--cgroup-write") == 0 && n_write < MAX_ITEMS) {
            cg_write[n_write++] = val;
        } else if (strcmp(opt, "--cgroup-join") == 0 && n_join < MAX_ITEMS) {
            cg_join[n_join++] = val;
        } else if (strcmp(opt, "--ro") == 0) {
            add_item('r', val);
        } else if (strcmp(opt, "--rw") == 0) {
            add_item('w', val);
        } else if (strcmp(opt, "--kvm") == 0) {
            add_item('k', val);
        } else if (strcmp(opt, "--dev") == 0) {
            if (strcmp(val, "tun") != 0)
                usage(val);
            add_item('t', "/dev/net/tun");
            networks = 1;
        } else {
            usage(opt);
        }
    }
    if (i >= argc - 1 || id <= 0 || id > 0x7fffffff)
        usage("--id N and -- TENDER are required");
    char **tender = argv + i + 1;
    if (tender[0][0] != '/')
        usage("the tender must be an absolute path");
    pid_t parent = getppid();
    /* A network namespace (tests make their own): entered here rather than by `ip netns exec`,
     * which would hide the host's /sys (and its cgroups) behind a sysfs of that namespace. */
    if (netns) {
        int fd = open(netns, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || setns(fd, CLONE_NEWNET) != 0)
            fail("setns", netns);
        close(fd);
    }

    /* Only 0-2 (the console) go on: the holder's are close-on-exec, anything else is not ours. */
    if (syscall(SYS_close_range, 3u, ~0u, 0u) != 0)
        for (int fd = 3; fd < 1024; fd++)
            close(fd);
    /* A mount namespace of our own, every mount in it private: nothing below shows on the host. */
    if (unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS) != 0)
        fail("unshare", NULL);
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
        fail("make mounts private", NULL);
    /* Every file is opened now (in the new namespace: a bind takes only its own mounts), before
     * the tmpfs can hide it (a path under --base), and bound
     * or copied from its descriptor: what the jail gets is what was checked here. */
    for (size_t k = 0; k < n_items; k++) {
        struct item *it = &items[k];
        if (it->kind == 'k' || it->kind == 't') {
            const char *what = it->kind == 'k' ? "KVM device" : "device";
            struct stat st;
            if (stat(it->path, &st) != 0)
                fail(what, it->path);
            if (!S_ISCHR(st.st_mode)) {
                errno = ENODEV;
                fail(it->kind == 'k' ? "KVM device (not a character device)" : "device (not a character device)",
                     it->path);
            }
            it->device = st.st_rdev;
            continue;
        }
        int flags = it->kind == 'r' ? O_PATH : O_RDWR | O_NOFOLLOW;
        it->fd = open(it->path, flags | O_CLOEXEC);
        struct stat st;
        if (it->fd < 0 || fstat(it->fd, &st) != 0)
            fail("open", it->path);
        if (it->kind != 'r' && !S_ISREG(st.st_mode)) {
            errno = EINVAL;
            fail("not a regular file:", it->path);
        }
        if (it->kind == 'w' && fchown(it->fd, (uid_t)id, (gid_t)id) != 0)
            fail("chown", it->path);
    }
    build_root(base, (uid_t)id);
    if (cpus)
        pin(cpus);
    set_limits();
    drop_privileges((uid_t)id);
    /* Changing credentials cleared the parent-death signal the holder set: set it again, and
     * give up if the holder died meanwhile (we would run unsupervised). */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 || getppid() != parent) {
        errno = errno ? errno : ESRCH;
        fail("parent-death signal", NULL);
    }
    filter(networks);
    char *empty[] = { NULL };
    execve(tender[0], tender, empty);
    fail("exec", tender[0]);
}
