/* petrel-spawner: starts tender processes for petreld and reports their exits.
 *
 * Why a separate process: fork() copies the caller's page tables and then makes it take a
 * copy-on-write fault on every page it writes. petreld is a Node process of ~100 MB, and on a
 * virtualised host that fork costs about 5 ms per tender; this process is a few hundred KB.
 * petreld starts it once and sends it requests; the tenders are its children.
 *
 * Protocol (petreld writes requests on our stdin, we write events on our stdout). Every frame
 * is a little-endian u32 length of the body, then the body; the body starts with one op byte.
 *
 *   spawn   'S' u32 id, u32 argc, u32 envc, u8 console kind ('F' fifo, 'A' append to file),
 *           then argc + envc + 1 NUL-terminated strings: the console path, argv, env.
 *   kill    'K' i32 pid, i32 signal: sent only while pid is our unreaped child, so a pid the
 *           kernel has already recycled is never signalled.
 *
 *   started 'P' u32 id, i32 pid
 *   failed  'E' u32 id, u8 stage ('C' opening the console, 'X' fork or exec), i32 errno
 *   exited  'X' i32 pid, i32 wait status (as waitpid returns it)
 *
 * The console of a tender is its stdin, stdout and stderr. A FIFO is opened without blocking,
 * so a FIFO nobody reads fails with ENXIO instead of hanging us, and is then switched to
 * blocking, because a tender must never see EAGAIN (solo5.md §1.12).
 *
 * We die with petreld (parent-death signal, and end of file on stdin), without touching the
 * tenders: Petrel's own tenders die with their parent in turn, and petreld's next start stops
 * any other leftover through its PID records, as it would if petreld had started them itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_FRAME (1u << 20)

static void die(const char *what)
{
    fprintf(stderr, "petrel-spawner: %s: %s\n", what, strerror(errno));
    exit(2);
}

static void die_protocol(const char *what)
{
    fprintf(stderr, "petrel-spawner: protocol error: %s\n", what);
    exit(2);
}

/* ---- children not yet reaped: the only pids we signal ---------------------------------- */

static pid_t *children;
static size_t n_children, cap_children;

static void child_add(pid_t pid)
{
    if (n_children == cap_children) {
        cap_children = cap_children ? 2 * cap_children : 64;
        children = realloc(children, cap_children * sizeof *children);
        if (!children)
            die("realloc");
    }
    children[n_children++] = pid;
}

static int child_index(pid_t pid)
{
    for (size_t i = 0; i < n_children; i++)
        if (children[i] == pid)
            return (int)i;
    return -1;
}

static void child_remove(pid_t pid)
{
    int i = child_index(pid);
    if (i >= 0)
        children[i] = children[--n_children];
}

/* ---- events ---------------------------------------------------------------------------- */

static void write_all(const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t n = write(STDOUT_FILENO, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            exit(errno == EPIPE ? 0 : 2); /* petreld is gone */
        p += n;
        len -= (size_t)n;
    }
}

static void put_u32(unsigned char *at, uint32_t v)
{
    at[0] = v & 0xff;
    at[1] = (v >> 8) & 0xff;
    at[2] = (v >> 16) & 0xff;
    at[3] = (v >> 24) & 0xff;
}

static uint32_t get_u32(const unsigned char *at)
{
    return (uint32_t)at[0] | (uint32_t)at[1] << 8 | (uint32_t)at[2] << 16 | (uint32_t)at[3] << 24;
}

static void emit(char op, uint32_t a, uint32_t b, int with_stage, char stage)
{
    unsigned char frame[4 + 1 + 4 + 1 + 4];
    size_t len = 0;
    frame[4 + len++] = (unsigned char)op;
    put_u32(frame + 4 + len, a);
    len += 4;
    if (with_stage)
        frame[4 + len++] = (unsigned char)stage;
    put_u32(frame + 4 + len, b);
    len += 4;
    put_u32(frame, (uint32_t)len);
    write_all(frame, 4 + len);
}

/* ---- spawn ----------------------------------------------------------------------------- */

static int open_console(char kind, const char *path)
{
    if (kind == 'A')
        return open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
    int fd = open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    int failed = fstat(fd, &st) != 0 ? errno : !S_ISFIFO(st.st_mode) ? ENOTSUP : 0;
    if (failed) {
        close(fd); /* ENOTSUP stands for "not a FIFO" */
        errno = failed;
        return -1;
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

/* execve of `file`, searched on the PATH of `env` (not ours) when it has no slash, as execvp
 * would search it; returns only on failure, with the most telling errno. */
static int exec_on_path(char **argv, char **env)
{
    const char *file = argv[0];
    if (strchr(file, '/')) {
        execve(file, argv, env);
        return errno;
    }
    const char *path = "/usr/bin:/bin";
    for (char **e = env; *e; e++)
        if (strncmp(*e, "PATH=", 5) == 0)
            path = *e + 5;
    int result = ENOENT;
    char candidate[4096];
    for (const char *dir = path;; dir++) {
        const char *colon = strchrnul(dir, ':');
        size_t dlen = (size_t)(colon - dir);
        if (dlen + 1 + strlen(file) + 1 <= sizeof candidate) {
            memcpy(candidate, dir, dlen);
            size_t at = dlen;
            if (dlen > 0)
                candidate[at++] = '/';
            strcpy(candidate + at, file);
            execve(candidate, argv, env);
            if (errno == EACCES)
                result = EACCES; /* found, but not executable: say so rather than ENOENT */
            else if (errno != ENOENT && errno != ENOTDIR)
                return errno;
        }
        if (*colon == '\0')
            return result;
        dir = colon;
    }
}

/* In the child, which shares our memory until it execs (vfork): the console on 0, 1 and 2,
 * default signal handling, then exec. It changes nothing of ours but its own descriptors, mask
 * and dispositions. A failure is written to `report` (close-on-exec, so success closes it
 * unwritten). */
static void exec_child(int console, int report, char **argv, char **env, const sigset_t *mask)
{
    int err = 0;
    for (int fd = 0; fd <= 2 && err == 0; fd++)
        if (dup2(console, fd) < 0)
            err = errno;
    /* dup2 clears close-on-exec on 0-2; every other descriptor of ours has it set. */
    signal(SIGPIPE, SIG_DFL);
    sigprocmask(SIG_UNBLOCK, mask, NULL);
    if (err == 0)
        err = exec_on_path(argv, env);
    ssize_t ignored = write(report, &err, sizeof err);
    (void)ignored;
    _exit(127);
}

/* vfork: no copy of our page tables; we are suspended until the child execs or exits. Kept out
 * of line so that no variable of the caller lives across the vfork. */
__attribute__((noinline)) static pid_t start_child(int console, int report, char **argv, char **env,
                                                   const sigset_t *mask)
{
    pid_t pid = vfork();
    if (pid == 0)
        exec_child(console, report, argv, env, mask);
    return pid;
}

static void spawn(const unsigned char *body, size_t len, const sigset_t *mask)
{
    if (len < 4 + 4 + 4 + 1)
        die_protocol("short spawn request");
    uint32_t id = get_u32(body);
    uint32_t argc = get_u32(body + 4);
    uint32_t envc = get_u32(body + 8);
    char kind = (char)body[12];
    if (argc < 1 || argc > 65536 || envc > 65536 || (kind != 'F' && kind != 'A'))
        die_protocol("bad spawn counts or console kind");
    const char *at = (const char *)body + 13;
    const char *end = (const char *)body + len;
    size_t total = 1 + argc + envc;
    char **strings = calloc(total + 2, sizeof *strings);
    if (!strings)
        die("calloc");
    for (size_t i = 0; i < total; i++) {
        const char *nul = memchr(at, '\0', (size_t)(end - at));
        if (!nul)
            die_protocol("unterminated string in spawn request");
        strings[i] = (char *)at;
        at = nul + 1;
    }
    if (at != end)
        die_protocol("trailing bytes in spawn request");
    /* strings: [console, argv..., NULL, env..., NULL] once shifted into place. */
    char **argv = calloc(argc + 1, sizeof *argv);
    char **env = calloc(envc + 1, sizeof *env);
    if (!argv || !env)
        die("calloc");
    memcpy(argv, strings + 1, argc * sizeof *argv);
    memcpy(env, strings + 1 + argc, envc * sizeof *env);

    int console = open_console(kind, strings[0]);
    if (console < 0) {
        emit('E', id, (uint32_t)errno, 1, 'C');
        goto out;
    }
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0) {
        emit('E', id, (uint32_t)errno, 1, 'X');
        close(console);
        goto out;
    }
    pid_t pid = start_child(console, report[1], argv, env, mask);
    int fork_errno = errno;
    close(report[1]);
    close(console);
    if (pid < 0) {
        close(report[0]);
        emit('E', id, (uint32_t)fork_errno, 1, 'X');
        goto out;
    }
    int exec_errno = 0;
    ssize_t n;
    do
        n = read(report[0], &exec_errno, sizeof exec_errno);
    while (n < 0 && errno == EINTR);
    close(report[0]);
    child_add(pid);
    if (n == (ssize_t)sizeof exec_errno) {
        /* Reaped with the other exits; petreld learns the failure from this event. */
        emit('E', id, (uint32_t)exec_errno, 1, 'X');
    } else {
        emit('P', id, (uint32_t)pid, 0, 0);
    }
out:
    free(argv);
    free(env);
    free(strings);
}

static void kill_child(const unsigned char *body, size_t len)
{
    if (len != 8)
        die_protocol("kill request of wrong length");
    pid_t pid = (pid_t)get_u32(body);
    int sig = (int)get_u32(body + 4);
    if (child_index(pid) >= 0)
        kill(pid, sig);
}

static void reap(void)
{
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        child_remove(pid);
        emit('X', (uint32_t)pid, (uint32_t)status, 0, 0);
    }
}

int main(void)
{
    pid_t parent = getppid();
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
        die("prctl(PR_SET_PDEATHSIG)");
    if (getppid() != parent)
        return 0;
    signal(SIGPIPE, SIG_IGN);

    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGCHLD);
    if (sigprocmask(SIG_BLOCK, &mask, NULL) != 0)
        die("sigprocmask");
    int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0)
        die("signalfd");

    unsigned char *buf = malloc(MAX_FRAME + 4);
    size_t have = 0;
    if (!buf)
        die("malloc");
    for (;;) {
        struct pollfd fds[2] = { { STDIN_FILENO, POLLIN, 0 }, { sfd, POLLIN, 0 } };
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            die("poll");
        }
        if (fds[1].revents & POLLIN) {
            struct signalfd_siginfo info;
            while (read(sfd, &info, sizeof info) > 0)
                ;
            reap();
        }
        if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t n = read(STDIN_FILENO, buf + have, MAX_FRAME + 4 - have);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0)
                die("read");
            if (n == 0)
                return 0; /* petreld closed its end: it is stopping or gone */
            have += (size_t)n;
            size_t used = 0;
            while (have - used >= 4) {
                uint32_t len = get_u32(buf + used);
                if (len < 1 || len > MAX_FRAME)
                    die_protocol("frame length out of range");
                if (have - used - 4 < len)
                    break;
                const unsigned char *body = buf + used + 4;
                if (body[0] == 'S')
                    spawn(body + 1, len - 1, &mask);
                else if (body[0] == 'K')
                    kill_child(body + 1, len - 1);
                else
                    die_protocol("unknown op");
                used += 4 + len;
            }
            memmove(buf, buf + used, have - used);
            have -= used;
        }
    }
}
