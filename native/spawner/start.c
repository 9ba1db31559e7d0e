/* start.c: the pieces petrel-spawner and petrel-holder share (see start.h). */
#include "start.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

void put_u32(unsigned char *at, uint32_t v)
{
    at[0] = v & 0xff;
    at[1] = (v >> 8) & 0xff;
    at[2] = (v >> 16) & 0xff;
    at[3] = (v >> 24) & 0xff;
}

void put_u64(unsigned char *at, uint64_t v)
{
    put_u32(at, (uint32_t)v);
    put_u32(at + 4, (uint32_t)(v >> 32));
}

uint32_t get_u32(const unsigned char *at)
{
    return (uint32_t)at[0] | (uint32_t)at[1] << 8 | (uint32_t)at[2] << 16 | (uint32_t)at[3] << 24;
}

uint64_t get_u64(const unsigned char *at)
{
    return (uint64_t)get_u32(at) | (uint64_t)get_u32(at + 4) << 32;
}

int open_fifo_writer(const char *path)
{
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

int split_strings(const char *at, const char *end, char **out, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        const char *nul = memchr(at, '\0', (size_t)(end - at));
        if (!nul)
            return -1;
        out[i] = (char *)at;
        at = nul + 1;
    }
    return at == end ? 0 : -2;
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

/* In the child, which shares our memory until it execs (vfork): descriptors 0, 1 and 2 from
 * `fds`, default signal handling, the parent-death signal when asked, then exec. It changes
 * nothing of ours but its own descriptors, mask and dispositions. Every descriptor of ours is
 * close-on-exec. */
static void exec_child(const int fds[3], int report, char **argv, char **env, const sigset_t *mask, pid_t parent)
{
    int err = 0;
    for (int fd = 0; fd <= 2 && err == 0; fd++)
        if (dup2(fds[fd], fd) < 0)
            err = errno;
    signal(SIGPIPE, SIG_DFL);
    sigprocmask(SIG_UNBLOCK, mask, NULL);
    /* The signal follows the parent *thread*; both callers are single-threaded. A parent that
     * died before prctl took effect has already left us to init: give up rather than run
     * unsupervised. */
    if (err == 0 && parent != 0 && (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent))
        err = errno ? errno : ESRCH;
    if (err == 0)
        err = exec_on_path(argv, env);
    ssize_t ignored = write(report, &err, sizeof err);
    (void)ignored;
    _exit(127);
}

/* vfork: no copy of our page tables; we are suspended until the child execs or exits. Kept out
 * of line so that no variable of the caller lives across the vfork. */
__attribute__((noinline)) pid_t start_child(const int fds[3], int report, char **argv, char **env,
                                            const sigset_t *mask, pid_t parent)
{
    pid_t pid = vfork();
    if (pid == 0)
        exec_child(fds, report, argv, env, mask, parent);
    return pid;
}

int exec_result(int report)
{
    int exec_errno = 0;
    ssize_t n;
    do
        n = read(report, &exec_errno, sizeof exec_errno);
    while (n < 0 && errno == EINTR);
    close(report);
    return n == (ssize_t)sizeof exec_errno ? (exec_errno ? exec_errno : EIO) : 0;
}
