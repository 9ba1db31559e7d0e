/* hostile-tender: TEST ONLY. A stand-in for a tender that its guest has taken over (docs/threat-model.md).
 *
 * Given as `--tender-spt` (or, named *hvt*, as `--tender-hvt`), it is started exactly as a
 * tender is. Guest arguments of the form `hostile:KEY=VALUE` tell it what to attack; with
 * `hostile:run` among them it tries every way out listed below before anything else, reports
 * each on its console as `hostile: NAME: blocked (...)` or `hostile: NAME: ESCAPED (...)`, and a
 * last line `hostile: done, N escaped`. Then, with or without attacks, it execs the real tender
 * beside it (petrel-spt, or petrel-hvt when its name holds "hvt") with the same arguments less
 * its own, so the unikernel runs as usual: a second tenant's guest runs under it too.
 *
 * Keys: key (TLS key file), store (image store directory), image (a stored image), state (state
 * directory), sock (petreld's vmmd.sock), victim (another tenant's tender pid), port (a TCP and
 * a UDP port on 127.0.0.1 that the test listens on), abstract (an abstract unix socket name);
 * grow (a block file: write past RLIMIT_FSIZE, which ends it with SIGXFSZ, instead of the guest).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

static int escaped;

static void report(const char *name, int got_out, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void report(const char *name, int got_out, const char *fmt, ...)
{
    char detail[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    printf("hostile: %s: %s (%s)\n", name, got_out ? "ESCAPED" : "blocked", detail);
    fflush(stdout);
    escaped += got_out != 0;
}

static const char *get(int argc, char **argv, const char *key)
{
    size_t len = strlen(key);
    for (int i = 0; i < argc; i++)
        if (strncmp(argv[i], "hostile:", 8) == 0 && strncmp(argv[i] + 8, key, len) == 0 && argv[i][8 + len] == '=')
            return argv[i] + 8 + len + 1;
    return NULL;
}

/* An open of `path` that must fail: escaped when it succeeds (and, for reading, reads). */
static void try_open(const char *name, const char *path, int flags)
{
    if (!path) {
        report(name, 1, "not told what to attack");
        return;
    }
    int fd = open(path, flags, 0644);
    if (fd < 0) {
        report(name, 0, "%s: %s", path, strerror(errno));
        return;
    }
    char byte;
    ssize_t n = (flags & O_ACCMODE) == O_RDONLY ? read(fd, &byte, 1) : write(fd, "x", 1);
    report(name, n >= 0, "%s opened, %s %zd", path, (flags & O_ACCMODE) == O_RDONLY ? "read" : "wrote", n);
    close(fd);
}

static void try_list(const char *name, const char *dir)
{
    if (!dir) {
        report(name, 1, "not told what to attack");
        return;
    }
    DIR *d = opendir(dir);
    if (!d) {
        report(name, 0, "%s: %s", dir, strerror(errno));
        return;
    }
    int entries = 0;
    while (readdir(d))
        entries++;
    closedir(d);
    report(name, 1, "%s listed, %d entries", dir, entries);
}

static void attack(int argc, char **argv)
{
    report("root", getuid() == 0 || geteuid() == 0 || getgid() == 0, "uid %d euid %d gid %d", (int)getuid(),
           (int)geteuid(), (int)getgid());
    try_open("write-etc", "/etc/petrel-hostile", O_WRONLY | O_CREAT | O_TRUNC);
    try_open("tls-key", get(argc, argv, "key"), O_RDONLY);
    try_list("image-store", get(argc, argv, "store"));
    try_open("stored-image", get(argc, argv, "image"), O_RDONLY);
    try_list("state-dir", get(argc, argv, "state"));

    const char *victim_text = get(argc, argv, "victim");
    pid_t victim = victim_text ? (pid_t)atoi(victim_text) : 0;
    if (victim > 1) {
        int k = kill(victim, SIGKILL);
        report("signal-victim", k == 0, "kill(%d, SIGKILL): %s", (int)victim, k == 0 ? "sent" : strerror(errno));
        long t = ptrace(PTRACE_SEIZE, victim, 0, 0);
        report("ptrace-victim", t == 0, "PTRACE_SEIZE %d: %s", (int)victim, t == 0 ? "attached" : strerror(errno));
        if (t == 0)
            ptrace(PTRACE_DETACH, victim, 0, 0);
        const char *files[] = { "environ", "maps", "mem", "cmdline" };
        for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
            char path[64], name[32];
            snprintf(path, sizeof path, "/proc/%d/%s", (int)victim, files[i]);
            snprintf(name, sizeof name, "victim-proc-%s", files[i]);
            try_open(name, path, O_RDONLY);
        }
    } else {
        report("signal-victim", 1, "not told what to attack");
    }

    const char *sock = get(argc, argv, "sock");
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    if (s < 0) {
        report("vmmd-socket", 0, "socket(AF_UNIX): %s", strerror(errno));
    } else {
        struct sockaddr_un addr = { .sun_family = AF_UNIX };
        snprintf(addr.sun_path, sizeof addr.sun_path, "%s", sock ? sock : "");
        int c = connect(s, (struct sockaddr *)&addr, sizeof addr);
        report("vmmd-socket", c == 0, "connect %s: %s", addr.sun_path, c == 0 ? "connected" : strerror(errno));
        close(s);
    }
    const char *abstract = get(argc, argv, "abstract");
    s = socket(AF_UNIX, SOCK_STREAM, 0);
    if (s < 0) {
        report("abstract-socket", 0, "socket(AF_UNIX): %s", strerror(errno));
    } else {
        struct sockaddr_un addr = { .sun_family = AF_UNIX };
        size_t len = abstract ? strlen(abstract) : 0;
        if (len > sizeof addr.sun_path - 1)
            len = sizeof addr.sun_path - 1;
        memcpy(addr.sun_path + 1, abstract ? abstract : "", len);
        int c = connect(s, (struct sockaddr *)&addr, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len));
        report("abstract-socket", c == 0, "connect @%s: %s", abstract ? abstract : "", c == 0 ? "connected" : strerror(errno));
        close(s);
    }

    int tun = open("/dev/net/tun", O_RDWR);
    if (tun < 0) {
        report("create-interface-tun", 0, "/dev/net/tun: %s", strerror(errno));
    } else {
        struct ifreq ifr;
        memset(&ifr, 0, sizeof ifr);
        strcpy(ifr.ifr_name, "hostile0");
        ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
        int r = ioctl(tun, TUNSETIFF, &ifr);
        report("create-interface-tun", r == 0, "TUNSETIFF hostile0: %s", r == 0 ? "created" : strerror(errno));
        close(tun);
    }
    /* A jail with networks may read the routing tables (solo5's tenders list the interfaces):
     * the way out is making an interface, which the kernel must refuse without CAP_NET_ADMIN. */
    s = socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE);
    if (s < 0) {
        report("create-interface-netlink", 0, "socket(AF_NETLINK): %s", strerror(errno));
    } else {
        struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
        struct {
            struct nlmsghdr h;
            struct ifinfomsg i;
            char attrs[64];
        } req;
        memset(&req, 0, sizeof req);
        req.h.nlmsg_type = RTM_NEWLINK;
        req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL;
        req.i.ifi_family = AF_UNSPEC;
        size_t len = NLMSG_LENGTH(sizeof req.i);
        struct rtattr *name = (struct rtattr *)((char *)&req + NLMSG_ALIGN(len));
        name->rta_type = IFLA_IFNAME;
        name->rta_len = RTA_LENGTH(sizeof "hostile1");
        memcpy(RTA_DATA(name), "hostile1", sizeof "hostile1");
        len = NLMSG_ALIGN(len) + RTA_ALIGN(name->rta_len);
        struct rtattr *info = (struct rtattr *)((char *)&req + len);
        info->rta_type = IFLA_LINKINFO;
        struct rtattr *kind = (struct rtattr *)RTA_DATA(info);
        kind->rta_type = IFLA_INFO_KIND;
        kind->rta_len = RTA_LENGTH(sizeof "dummy");
        memcpy(RTA_DATA(kind), "dummy", sizeof "dummy");
        info->rta_len = (unsigned short)RTA_LENGTH(RTA_ALIGN(kind->rta_len));
        len += RTA_ALIGN(info->rta_len);
        req.h.nlmsg_len = (unsigned)len;
        int b = bind(s, (struct sockaddr *)&kernel, sizeof kernel);
        ssize_t sent = sendto(s, &req, len, 0, (struct sockaddr *)&kernel, sizeof kernel);
        int answer = -1;
        char reply[512];
        if (sent >= 0) {
            ssize_t got = recv(s, reply, sizeof reply, 0);
            struct nlmsghdr *h = (struct nlmsghdr *)reply;
            if (got >= (ssize_t)NLMSG_LENGTH(sizeof(struct nlmsgerr)) && h->nlmsg_type == NLMSG_ERROR)
                answer = -((struct nlmsgerr *)NLMSG_DATA(h))->error;
        }
        report("create-interface-netlink", answer == 0, "RTM_NEWLINK dummy hostile1: bind %s, send %s, %s",
               b == 0 ? "ok" : strerror(errno), sent >= 0 ? "ok" : strerror(errno),
               answer == 0 ? "created" : answer > 0 ? strerror(answer) : "no answer");
        close(s);
    }

    /* Opening it is the way out (an spt guest has no business with KVM). */
    int kvm = open("/dev/kvm", O_RDWR);
    report("kvm", kvm >= 0, "/dev/kvm: %s", kvm >= 0 ? "opened" : strerror(errno));
    if (kvm >= 0)
        close(kvm);

    /* Forks that succeed are counted and kept (paused) until the count is known. */
    pid_t kids[600];
    int forked = 0, fork_errno = 0;
    for (; forked < 600; forked++) {
        pid_t p = fork();
        if (p == 0) {
            pause();
            _exit(0);
        }
        if (p < 0) {
            fork_errno = errno;
            break;
        }
        kids[forked] = p;
    }
    report("fork-600", forked >= 600, "%d forked, then %s", forked, forked >= 600 ? "none refused" : strerror(fork_errno));
    for (int i = 0; i < forked; i++)
        kill(kids[i], SIGKILL);
    for (int i = 0; i < forked; i++)
        waitpid(kids[i], NULL, 0);

    /* clone3 carries its flags in a struct the jail's filter cannot read: it must be refused
     * whatever they say (a thread is made with clone and CLONE_THREAD). */
    {
        struct { unsigned long long flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls; } args;
        memset(&args, 0, sizeof args);
        args.exit_signal = SIGCHLD;
        long child = syscall(__NR_clone3, &args, sizeof args);
        if (child == 0)
            _exit(0);
        if (child > 0)
            waitpid((pid_t)child, NULL, 0);
        report("clone3-process", child >= 0, "clone3: %s", child >= 0 ? "a new process" : strerror(errno));
    }

    size_t gib = (size_t)1 << 30;
    unsigned char *big = mmap(NULL, gib, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (big == MAP_FAILED) {
        report("touch-1GiB", 0, "mmap 1 GiB: %s", strerror(errno));
    } else {
        for (size_t at = 0; at < gib; at += 4096)
            big[at] = 1;
        report("touch-1GiB", 1, "1 GiB mapped and touched");
        munmap(big, gib);
    }

    const struct { const char *name; int resource; } limits[] = {
        { "as", RLIMIT_AS }, { "nproc", RLIMIT_NPROC }, { "nofile", RLIMIT_NOFILE },
        { "fsize", RLIMIT_FSIZE }, { "core", RLIMIT_CORE },
    };
    char line[512];
    int at = snprintf(line, sizeof line, "hostile: limits");
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        struct rlimit r;
        getrlimit(limits[i].resource, &r);
        at += snprintf(line + at, sizeof line - (size_t)at, " %s=%llu/%llu", limits[i].name,
                       (unsigned long long)r.rlim_cur, (unsigned long long)r.rlim_max);
        struct rlimit more = { RLIM_INFINITY, RLIM_INFINITY };
        int raised = setrlimit(limits[i].resource, &more);
        char name[32];
        snprintf(name, sizeof name, "raise-%s", limits[i].name);
        report(name, raised == 0 && r.rlim_max != RLIM_INFINITY, "setrlimit to infinity: %s",
               raised == 0 ? "raised" : strerror(errno));
    }
    printf("%s\n", line);

    int u = setuid(0), ru = setresuid(0, 0, 0), g = setgid(0);
    gid_t root_group = 0;
    int sg = setgroups(1, &root_group);
    report("change-uid", u == 0 || ru == 0 || g == 0 || sg == 0, "setuid(0) %d, setresuid(0) %d, setgid(0) %d, setgroups %d",
           u, ru, g, sg);

    const char *port_text = get(argc, argv, "port");
    int port = port_text ? atoi(port_text) : 0;
    struct sockaddr_in lo = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    lo.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0) {
        report("loopback-tcp", 0, "socket(AF_INET, SOCK_STREAM): %s", strerror(errno));
    } else {
        int c = connect(s, (struct sockaddr *)&lo, sizeof lo);
        report("loopback-tcp", c == 0, "connect 127.0.0.1:%d: %s", port, c == 0 ? "connected" : strerror(errno));
        close(s);
    }
    s = socket(AF_INET, SOCK_DGRAM, 0);
    if (s < 0) {
        report("loopback-udp", 0, "socket(AF_INET, SOCK_DGRAM): %s", strerror(errno));
    } else {
        ssize_t n = sendto(s, "hostile", 7, 0, (struct sockaddr *)&lo, sizeof lo);
        int c = connect(s, (struct sockaddr *)&lo, sizeof lo);
        report("loopback-udp", n >= 0 || c == 0, "sendto 127.0.0.1:%d: %s, connect: %s", port,
               n >= 0 ? "sent" : strerror(errno), c == 0 ? "connected" : strerror(errno));
        close(s);
    }
    /* The jail's filter lets bind and sendto through with a netlink address's length (12 bytes)
     * when the jail has networks: an AF_INET socket must refuse an address that short. */
    s = socket(AF_INET, SOCK_DGRAM, 0);
    if (s < 0) {
        report("udp-netlink-length", 0, "socket(AF_INET, SOCK_DGRAM): %s", strerror(errno));
    } else {
        ssize_t n = sendto(s, "hostile", 7, 0, (struct sockaddr *)&lo, sizeof(struct sockaddr_nl));
        int sent_errno = errno;
        int b = bind(s, (struct sockaddr *)&lo, sizeof(struct sockaddr_nl));
        report("udp-netlink-length", n >= 0 || b == 0, "sendto 127.0.0.1:%d with 12 bytes: %s, bind: %s", port,
               n >= 0 ? "sent" : strerror(sent_errno), b == 0 ? "bound" : strerror(errno));
        close(s);
    }
    int us = unshare(CLONE_NEWUSER);
    report("user-namespace", us == 0, "unshare(CLONE_NEWUSER): %s", us == 0 ? "made" : strerror(errno));
    printf("hostile: done, %d escaped\n", escaped);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    int run = 0;
    for (int i = 1; i < argc; i++)
        run |= strcmp(argv[i], "hostile:run") == 0;
    if (run)
        attack(argc, argv);
    /* hostile:grow=FILE: write past RLIMIT_FSIZE into a block file; the kernel's SIGXFSZ ends us. */
    const char *grow = get(argc, argv, "grow");
    if (grow) {
        struct rlimit r;
        getrlimit(RLIMIT_FSIZE, &r);
        int fd = open(grow, O_RDWR);
        printf("hostile: growing %s past %llu bytes (fd %d)\n", grow, (unsigned long long)r.rlim_cur, fd);
        fflush(stdout);
        ssize_t n = pwrite(fd, "x", 1, (off_t)r.rlim_cur);
        printf("hostile: grew %zd: %s\n", n, strerror(errno));
        return 1;
    }
    /* The real tender beside this file, with our own arguments left out. */
    char tender[4096];
    const char *slash = strrchr(argv[0], '/');
    const char *base = slash ? slash + 1 : argv[0];
    snprintf(tender, sizeof tender, "%.*s%s", slash ? (int)(slash - argv[0] + 1) : 0, argv[0],
             strstr(base, "hvt") ? "petrel-hvt" : "petrel-spt");
    char **args = calloc((size_t)argc + 1, sizeof *args);
    int n = 0;
    args[n++] = tender;
    for (int i = 1; i < argc; i++)
        if (strncmp(argv[i], "hostile:", 8) != 0)
            args[n++] = argv[i];
    char *empty[] = { NULL };
    execve(tender, args, empty);
    fprintf(stderr, "hostile-tender: exec %s: %s\n", tender, strerror(errno));
    return 127;
}
