/* petrel-spawner: starts processes for petreld (host commands such as `ip`, `mkfifo`, a
 * tender's `--version`; tenders themselves are started by petrel-holder) and reports their
 * output and exits.
 *
 * Why a separate process: fork() copies the caller's page tables and then makes it take a
 * copy-on-write fault on every page it writes. petreld is a Node process of ~100 MB, and on a
 * virtualised host its fork cost about 5 ms per process started; this process is a few hundred
 * KB and uses vfork. petreld starts it once and sends it requests; the processes are its
 * children.
 *
 * Protocol (petreld writes requests on our stdin, we write events on our stdout). Every frame
 * is a little-endian u32 length of the body, then the body; the body starts with one op byte.
 *
 *   spawn   'S' u32 id, u32 argc, u32 envc, u8 kind, then argc + envc + 1 NUL-terminated
 *           strings: the console, argv, env. Kinds:
 *             'F'  stdin, stdout and stderr on the FIFO named by the console string;
 *             'A'  the same on the file named by it, opened for appending;
 *             'C'  capture: stdout and stderr are pipes whose bytes we send back, stdin is a
 *                  pipe holding the console string (at most PIPE_BUF bytes) and then closed.
 *   kill    'K' i32 pid, i32 signal: sent only while pid is our unreaped child, so a pid the
 *           kernel has already recycled is never signalled.
 *
 *   started 'P' u32 id, i32 pid
 *   failed  'E' u32 id, u8 stage ('C' opening the console, 'X' fork or exec), i32 errno
 *   output  'O' i32 pid, u8 stream (1 stdout, 2 stderr), bytes (captured children only)
 *   exited  'X' i32 pid, i32 wait status (as waitpid returns it), after all its output
 *
 * A FIFO console is opened without blocking, so a FIFO nobody reads fails with ENXIO instead
 * of hanging us, and is then switched to blocking, because a tender must never see EAGAIN
 * (solo5.md §1.12).
 *
 * We die with petreld (parent-death signal, and end of file on stdin), without touching the
 * children, which are short-lived commands.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

#include "start.h"

#define MAX_FRAME (1u << 20)
#define OUTPUT_CHUNK 65536

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

/* One event: op, a u32, an optional stage/stream byte, then a u32 or raw bytes. */
static void emit(char op, uint32_t a, int has_byte, unsigned char byte, const void *tail, size_t tail_len)
{
    unsigned char head[4 + 1 + 4 + 1];
    size_t len = 0;
    head[4 + len++] = (unsigned char)op;
    put_u32(head + 4 + len, a);
    len += 4;
    if (has_byte)
        head[4 + len++] = byte;
    put_u32(head, (uint32_t)(len + tail_len));
    write_all(head, 4 + len);
    write_all(tail, tail_len);
}

static void emit_u32(char op, uint32_t a, int has_byte, unsigned char byte, uint32_t b)
{
    unsigned char tail[4];
    put_u32(tail, b);
    emit(op, a, has_byte, byte, tail, sizeof tail);
}

/* ---- children: the only pids we signal are the unreaped ones --------------------------- */

struct child {
    pid_t pid;
    int out, err; /* capture pipes still open, or -1 */
    int reaped;
    int status;
};

static struct child *children;
static size_t n_children, cap_children;

static struct child *child_add(pid_t pid, int out, int err)
{
    if (n_children == cap_children) {
        cap_children = cap_children ? 2 * cap_children : 64;
        children = realloc(children, cap_children * sizeof *children);
        if (!children)
            die("realloc");
    }
    children[n_children] = (struct child){ pid, out, err, 0, 0 };
    return &children[n_children++];
}

static struct child *child_find(pid_t pid)
{
    for (size_t i = 0; i < n_children; i++)
        if (children[i].pid == pid)
            return &children[i];
    return NULL;
}

/* Reports the exit once the child is reaped and its output is all sent, then forgets it. */
static void child_settle(struct child *c)
{
    if (!c->reaped || c->out >= 0 || c->err >= 0)
        return;
    emit_u32('X', (uint32_t)c->pid, 0, 0, (uint32_t)c->status);
    *c = children[--n_children];
}

/* ---- spawn ----------------------------------------------------------------------------- */

static int open_console(char kind, const char *path)
{
    if (kind == 'A')
        return open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
    return open_fifo_writer(path);
}

static void close_all(int *fds, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

/* The child's 0, 1, 2 in `fds`, and for captures our read ends in out/err. The descriptors
 * to close once the child has them are listed in `theirs`. Returns 0 or an errno. */
static int prepare_stdio(char kind, const char *console, int fds[3], int theirs[4], int *out, int *err)
{
    for (int i = 0; i < 4; i++)
        theirs[i] = -1;
    *out = *err = -1;
    if (kind != 'C') {
        int fd = open_console(kind, console);
        if (fd < 0)
            return errno;
        fds[0] = fds[1] = fds[2] = theirs[0] = fd;
        return 0;
    }
    size_t input = strlen(console);
    if (input > PIPE_BUF)
        return E2BIG;
    int in[2] = { -1, -1 }, o[2] = { -1, -1 }, e[2] = { -1, -1 };
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(o, O_CLOEXEC) != 0 || pipe2(e, O_CLOEXEC) != 0) {
        int saved = errno;
        int all[6] = { in[0], in[1], o[0], o[1], e[0], e[1] };
        close_all(all, 6);
        return saved;
    }
    /* At most PIPE_BUF bytes into an empty pipe: written at once, never blocks. */
    if (input > 0 && write(in[1], console, input) != (ssize_t)input) {
        int saved = errno;
        int all[6] = { in[0], in[1], o[0], o[1], e[0], e[1] };
        close_all(all, 6);
        return saved ? saved : EIO;
    }
    close(in[1]);
    fcntl(o[0], F_SETFL, O_NONBLOCK);
    fcntl(e[0], F_SETFL, O_NONBLOCK);
    fds[0] = in[0];
    fds[1] = o[1];
    fds[2] = e[1];
    theirs[0] = in[0];
    theirs[1] = o[1];
    theirs[2] = e[1];
    *out = o[0];
    *err = e[0];
    return 0;
}

static void spawn(const unsigned char *body, size_t len, const sigset_t *mask)
{
    if (len < 4 + 4 + 4 + 1)
        die_protocol("short spawn request");
    uint32_t id = get_u32(body);
    uint32_t argc = get_u32(body + 4);
    uint32_t envc = get_u32(body + 8);
    char kind = (char)body[12];
    if (argc < 1 || argc > 65536 || envc > 65536 || (kind != 'F' && kind != 'A' && kind != 'C'))
        die_protocol("bad spawn counts or console kind");
    const char *at = (const char *)body + 13;
    const char *end = (const char *)body + len;
    size_t total = 1 + argc + envc;
    char **strings = calloc(total, sizeof *strings);
    char **argv = calloc(argc + 1, sizeof *argv);
    char **env = calloc(envc + 1, sizeof *env);
    if (!strings || !argv || !env)
        die("calloc");
    int split = split_strings(at, end, strings, total);
    if (split != 0)
        die_protocol(split == -1 ? "unterminated string in spawn request" : "trailing bytes in spawn request");
    memcpy(argv, strings + 1, argc * sizeof *argv);
    memcpy(env, strings + 1 + argc, envc * sizeof *env);

    int fds[3], theirs[4], out, err, report[2];
    int failed = prepare_stdio(kind, strings[0], fds, theirs, &out, &err);
    if (failed) {
        emit_u32('E', id, 1, 'C', (uint32_t)failed);
        goto done;
    }
    if (pipe2(report, O_CLOEXEC) != 0) {
        emit_u32('E', id, 1, 'X', (uint32_t)errno);
        int ours[2] = { out, err };
        close_all(theirs, 4);
        close_all(ours, 2);
        goto done;
    }
    pid_t pid = start_child(fds, report[1], argv, env, mask, 0);
    int fork_errno = errno;
    close(report[1]);
    close_all(theirs, 4);
    if (pid < 0) {
        close(report[0]);
        int ours[2] = { out, err };
        close_all(ours, 2);
        emit_u32('E', id, 1, 'X', (uint32_t)fork_errno);
        goto done;
    }
    int exec_errno = exec_result(report[0]);
    if (exec_errno != 0) {
        /* Reaped with the other exits but never reported: petreld learns it from this event. */
        int ours[2] = { out, err };
        close_all(ours, 2);
        child_add(pid, -1, -1);
        emit_u32('E', id, 1, 'X', (uint32_t)exec_errno);
        struct child *c = child_find(pid);
        c->status = -1; /* marks "unreported" for reap() */
    } else {
        child_add(pid, out, err);
        emit_u32('P', id, 0, 0, (uint32_t)pid);
    }
done:
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
    struct child *c = child_find(pid);
    if (c && !c->reaped)
        kill(pid, sig);
}

static void reap(void)
{
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        struct child *c = child_find(pid);
        if (!c)
            continue;
        if (c->status == -1) { /* its exec failed, already reported */
            *c = children[--n_children];
            continue;
        }
        c->reaped = 1;
        c->status = status;
        child_settle(c);
    }
}

/* Forwards what a captured child wrote; at end of file closes the pipe. */
static void drain(struct child *c, int stream)
{
    int *fd = stream == 1 ? &c->out : &c->err;
    static unsigned char chunk[OUTPUT_CHUNK];
    for (;;) {
        ssize_t n = read(*fd, chunk, sizeof chunk);
        if (n > 0) {
            emit('O', (uint32_t)c->pid, 1, (unsigned char)stream, chunk, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        close(*fd); /* end of file, or an error we cannot do better with */
        *fd = -1;
        child_settle(c);
        return;
    }
}

static void handle_requests(unsigned char *buf, size_t *have, const sigset_t *mask)
{
    size_t used = 0;
    while (*have - used >= 4) {
        uint32_t len = get_u32(buf + used);
        if (len < 1 || len > MAX_FRAME)
            die_protocol("frame length out of range");
        if (*have - used - 4 < len)
            break;
        const unsigned char *body = buf + used + 4;
        if (body[0] == 'S')
            spawn(body + 1, len - 1, mask);
        else if (body[0] == 'K')
            kill_child(body + 1, len - 1);
        else
            die_protocol("unknown op");
        used += 4 + len;
    }
    memmove(buf, buf + used, *have - used);
    *have -= used;
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
    struct pollfd *fds = NULL;
    size_t cap_fds = 0;
    if (!buf)
        die("malloc");
    for (;;) {
        /* stdin, the signalfd, then every open capture pipe (two per captured child). */
        size_t want = 2 + 2 * n_children;
        if (want > cap_fds) {
            cap_fds = want * 2;
            fds = realloc(fds, cap_fds * sizeof *fds);
            if (!fds)
                die("realloc");
        }
        size_t n = 0;
        fds[n++] = (struct pollfd){ STDIN_FILENO, POLLIN, 0 };
        fds[n++] = (struct pollfd){ sfd, POLLIN, 0 };
        for (size_t i = 0; i < n_children; i++) {
            fds[n++] = (struct pollfd){ children[i].out, POLLIN, 0 }; /* -1 is skipped */
            fds[n++] = (struct pollfd){ children[i].err, POLLIN, 0 };
        }
        if (poll(fds, n, -1) < 0) {
            if (errno == EINTR)
                continue;
            die("poll");
        }
        /* Output before exits, so a child's last bytes are sent before its exit. Pipes are
         * looked up by descriptor: draining may settle (and move) children. */
        for (size_t i = 2; i < n; i++) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            for (size_t k = 0; k < n_children; k++) {
                if (children[k].out == fds[i].fd) {
                    drain(&children[k], 1);
                    break;
                }
                if (children[k].err == fds[i].fd) {
                    drain(&children[k], 2);
                    break;
                }
            }
        }
        if (fds[1].revents & POLLIN) {
            struct signalfd_siginfo info;
            while (read(sfd, &info, sizeof info) > 0)
                ;
            reap();
        }
        if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t got = read(STDIN_FILENO, buf + have, MAX_FRAME + 4 - have);
            if (got < 0 && errno == EINTR)
                continue;
            if (got < 0)
                die("read");
            if (got == 0)
                return 0; /* petreld closed its end: it is stopping or gone */
            have += (size_t)got;
            handle_requests(buf, &have, &mask);
        }
    }
}
