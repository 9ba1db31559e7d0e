/* petrel-holder: the parent of petreld's tenders, which outlives petreld (Petrel (k)).
 *
 * Why: a tender that is petreld's child (or has a parent-death signal towards petreld) dies
 * with it, so every upgrade or crash of the daemon became a restart of every guest. The holder
 * is a small single-threaded process, one per run directory, that petreld connects to over a
 * unix socket. It starts tenders (vfork, as petrel-spawner does), holds the read end of each
 * tender's console FIFO, keeps the last bytes of each console in a ring with a running byte
 * offset, reaps exits and remembers each status until a petreld collects it. While no petreld
 * is attached it keeps reading, so a guest never blocks on the daemon's absence; what the ring
 * overwrites before a petreld acknowledged it is dropped, and the offsets show how much.
 *
 * Every tender gets SIGKILL when the holder dies (parent-death signal set before exec), so no
 * tender ever runs unsupervised; petreld then restores them from its state as after any crash.
 *
 * Usage: petrel-holder [--idle-exit-ms N] DIR. DIR (made 0700 by petreld) holds `sock` (the socket), `lock` (held
 * by the one holder of DIR, so a second start exits 0 at once) and `log` (our rare messages).
 * The started process binds the socket, then forks: the parent exits 0 once the child listens,
 * and the child, in its own session, is the holder. It ends when nobody is attached, it holds no
 * child or exit status and has been idle for --idle-exit-ms (default 5000); or, killing its tenders, when `sock`
 * is removed or replaced (the run directory was deleted: nobody could ever attach again).
 *
 * Protocol: frames of a little-endian u32 body length, then the body, which starts with an op
 * byte; integers little-endian, times in ms since the epoch, offsets in bytes since the start
 * of a console. One connection at a time is the owner; a second gets `B` and is closed.
 *
 *   petreld → holder
 *   H  u32 version                          first frame of a connection
 *   S  u32 id, u32 argc, u32 envc, u32 ring bytes (0: 64 KiB), u8 kind, then NUL-terminated:
 *      console, tag, meta, argv…, env…      kind 'H': console is a FIFO whose both ends we open
 *                                           (the tender writes, we read); 'A': a file opened
 *                                           for appending, nothing read. tag and meta are kept
 *                                           for petreld and listed back.
 *   K  i32 pid, i32 signal                  only while pid is our unreaped child
 *   L                                       list every child
 *   W  i32 pid                              watch: send its ring from the oldest byte kept,
 *                                           then live output, then its exit
 *   P  i32 pid / R i32 pid                  pause / resume reading its console (flow control;
 *                                           undone when the owner leaves)
 *   A  i32 pid, u64 offset                  acknowledge: console handled up to offset
 *   F  i32 pid                              forget an exited child (its status was collected)
 *
 *   holder → petreld
 *   H  u32 version, i32 holder pid
 *   B  i32 owner pid                        busy: another connection is the owner
 *   P  u32 id, i32 pid                      started (children spawned are watched at once)
 *   E  u32 id, u8 stage ('C' console, 'X' fork or exec), i32 errno
 *   O  i32 pid, u64 offset, u64 time, bytes console bytes, one read's time; an offset beyond
 *                                           the previous end means bytes were dropped
 *   X  i32 pid, i32 wait status, u64 time   after every byte of its console was sent
 *   W  i32 pid, u64 first, u64 end, u64 acked   answer to W, before its O frames
 *   U  i32 pid                              answer to W, P, R, A, F for a pid we do not hold
 *   C  i32 pid, u8 state ('R' running, 'X' exited), i32 status, u64 started, u64 exited,
 *      u64 first, u64 end, u64 acked, tag NUL, meta NUL          one per child, answering L
 *   L  u32 count                            end of the listing
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "start.h"

#define VERSION 1
#define MAX_FRAME (1u << 20)
#define DEFAULT_RING (64u * 1024)
#define MAX_RING (16u * 1024 * 1024)
/* Read times kept per console: the time of older bytes is that of the oldest read kept. */
#define MARKS 256
/* Console bytes framed for the owner only while less than this is waiting to be written: what
 * is framed is in flight, and a petreld that pauses a console still receives it. */
#define OUT_LOW (64u * 1024)
#define OUTPUT_CHUNK (16u * 1024)
/* How long a console may keep draining after its tender was reaped. */
#define DRAIN_MS 10000
/* The FIFO's buffer, asked for with F_SETPIPE_SZ (the kernel's default is 64 KiB): the tender
 * writes on while we rest or are not scheduled for a while (20 ms of a guest printing 13 MB/s).
 * Kernel memory per console while it is full, so not more; a paused console still stops its
 * tender once this and the ring are full. Best effort: the per-user pipe limits may refuse it. */
#define PIPE_BYTES (256 * 1024)
/* A read that emptied the FIFO is followed by a rest of REST_MS in which the console is not
 * polled: a guest printing a line at a time is read in batches (one wake-up, read and frame
 * for the lines of a rest, and the tender's writes meanwhile wake nobody), while one printing
 * now and then is read at once. A read that filled the room it had is not: more is waiting.
 * The price: a line is read (and timestamped) at most REST_MS after it was written. */
#define REST_MS 5
static long idle_exit_ms = 5000;
#define WATCHDOG_MS 1000

static int log_fd = 2;
static char socket_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
static dev_t socket_dev;
static ino_t socket_ino;

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void say(const char *fmt, ...)
{
    char line[512];
    int n = snprintf(line, sizeof line, "petrel-holder[%d]: ", (int)getpid());
    va_list ap;
    va_start(ap, fmt);
    n += vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    if (n >= (int)sizeof line - 1)
        n = (int)sizeof line - 2;
    line[n++] = '\n';
    ssize_t ignored = write(log_fd, line, (size_t)n);
    (void)ignored;
}

static void die(const char *what)
{
    say("%s: %s", what, strerror(errno));
    exit(2);
}

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n);
    if (!q)
        die("realloc");
    return q;
}

/* ---- children ---------------------------------------------------------------------------- */

struct mark {
    uint64_t end; /* console offset after a read */
    int64_t time;
};

/* A link of an intrusive circular list: a wake-up visits the children that have something to
 * do, never all of them. A link outside any list has next == NULL. */
struct link {
    struct link *prev, *next;
};

static int list_empty(const struct link *list)
{
    return list->next == list;
}

static void list_append(struct link *list, struct link *l)
{
    if (l->next)
        return;
    l->prev = list->prev;
    l->next = list;
    list->prev->next = l;
    list->prev = l;
}

static void list_remove(struct link *l)
{
    if (!l->next)
        return;
    l->prev->next = l->next;
    l->next->prev = l->prev;
    l->prev = l->next = NULL;
}

#define CHILD_OF(l, field) ((struct child *)((char *)(l) - offsetof(struct child, field)))

struct child {
    pid_t pid;
    char *tag, *meta;
    int console; /* our read end, or -1 once closed (or never had one) */
    int reaped, status, exec_failed;
    int64_t started, exited, drain_deadline;
    /* The ring holds console bytes [end - min(end, ring_size), end). */
    unsigned char *ring;
    uint32_t ring_size;
    uint64_t end, acked;
    struct mark *marks;
    unsigned mark_head, mark_count;
    /* Owner state, reset when the owner leaves. */
    int watched, paused, exit_sent;
    uint64_t sent;
    /* Bookkeeping of the event loop: the console is in the epoll set exactly while
     * reading() holds (update_interest); `due` links it into owner_due while it may have
     * frames for the owner; `draining` into the reaped children whose console is still open. */
    int polled;
    struct link due, draining;
    /* Resting after a read until rest_until: not reading() meanwhile. */
    int resting;
    int64_t rest_until;
    struct link rest;
    size_t index; /* in children[] */
    struct child *pid_next; /* its bucket of by_pid */
};

static struct child **children;
static size_t n_children, cap_children;
/* Children by pid: acknowledgements (one per console chunk petreld handles) and exits look a
 * child up, which must not cost a walk over all of them. Chained, at most one child a bucket
 * on average. */
static struct child **by_pid;
static size_t n_buckets;
/* Watched children that may have output or an exit to frame for the owner, oldest first. */
static struct link owner_due = { &owner_due, &owner_due };
/* Reaped children whose console is still open, in the order of their drain deadlines (which
 * are their reap times plus the same DRAIN_MS: appending keeps the list sorted). */
static struct link draining = { &draining, &draining };
/* Consoles resting after a read, in the order their rests end (all last REST_MS). */
static struct link resting = { &resting, &resting };

static size_t bucket_of(pid_t pid)
{
    return ((uint32_t)pid * 2654435761u) & (n_buckets - 1);
}

static struct child *child_find(pid_t pid)
{
    if (n_buckets == 0)
        return NULL;
    for (struct child *c = by_pid[bucket_of(pid)]; c; c = c->pid_next)
        if (c->pid == pid)
            return c;
    return NULL;
}

static void child_add(struct child *c)
{
    if (n_children == cap_children) {
        cap_children = cap_children ? 2 * cap_children : 64;
        children = xrealloc(children, cap_children * sizeof *children);
    }
    c->index = n_children;
    children[n_children++] = c;
    if (n_children > n_buckets) {
        free(by_pid);
        n_buckets = n_buckets ? 2 * n_buckets : 64;
        by_pid = calloc(n_buckets, sizeof *by_pid);
        if (!by_pid)
            die("calloc");
        for (size_t i = 0; i < n_children; i++) {
            struct child *o = children[i];
            o->pid_next = by_pid[bucket_of(o->pid)];
            by_pid[bucket_of(o->pid)] = o;
        }
    } else {
        c->pid_next = by_pid[bucket_of(c->pid)];
        by_pid[bucket_of(c->pid)] = c;
    }
}

/* Only a settled child (its console closed, so out of the epoll set) or one whose exec failed
 * (it never had a console) is freed: no event of the current wake-up can point at it. */
static void child_free(struct child *c)
{
    if (c->console >= 0)
        close(c->console);
    list_remove(&c->due);
    list_remove(&c->draining);
    list_remove(&c->rest);
    struct child **at = &by_pid[bucket_of(c->pid)];
    while (*at != c)
        at = &(*at)->pid_next;
    *at = c->pid_next;
    children[c->index] = children[--n_children];
    children[c->index]->index = c->index;
    free(c->tag);
    free(c->meta);
    free(c->ring);
    free(c->marks);
    free(c);
}

static int settled(const struct child *c)
{
    return c->reaped && c->console < 0;
}

static uint64_t ring_first(const struct child *c)
{
    return c->end > c->ring_size ? c->end - c->ring_size : 0;
}

/* ---- the owner: one connection, its input and a queue of frames for it ------------------- */

/* One epoll set (level-triggered, as poll was) holds the listener, the signalfd, the owner and
 * every console that is reading(); data.ptr is the child, or one of these tags. */
static int epoll_fd = -1;
static char tag_listener, tag_signals, tag_owner;
static uint32_t owner_events; /* what the owner is registered for */

static void epoll_set(int op, int fd, uint32_t events, void *ptr)
{
    struct epoll_event ev = { .events = events, .data.ptr = ptr };
    if (epoll_ctl(epoll_fd, op, fd, &ev) != 0)
        die("epoll_ctl");
}

static void update_interest(struct child *c);

static int owner = -1;
static pid_t owner_pid;
static unsigned char *in_buf;
static size_t in_have;
static unsigned char *out_buf;
static size_t out_len, out_cap;

/* Appends a frame of `op` and `args_len` bytes of arguments to the owner's queue; returns where
 * the arguments go. */
static unsigned char *frame_begin(char op, size_t args_len)
{
    size_t need = out_len + 5 + args_len;
    if (need > out_cap) {
        out_cap = need * 2;
        out_buf = xrealloc(out_buf, out_cap);
    }
    unsigned char *at = out_buf + out_len;
    put_u32(at, (uint32_t)(1 + args_len));
    at[4] = (unsigned char)op;
    out_len = need;
    return at + 5;
}

static void send_u32_i32(char op, uint32_t a, int32_t b)
{
    unsigned char *at = frame_begin(op, 8);
    put_u32(at, a);
    put_u32(at + 4, (uint32_t)b);
}

static void send_pid(char op, pid_t pid)
{
    put_u32(frame_begin(op, 4), (uint32_t)pid);
}

/* A rare event: walking every child here is fine. Nothing is watched or paused any more, so
 * each console may read its whole ring again. */
static void owner_detach(const char *why)
{
    if (owner < 0)
        return;
    epoll_set(EPOLL_CTL_DEL, owner, 0, NULL);
    close(owner);
    owner = -1;
    in_have = 0;
    out_len = 0;
    while (!list_empty(&owner_due))
        list_remove(owner_due.next);
    for (size_t i = 0; i < n_children; i++) {
        children[i]->watched = 0;
        children[i]->paused = 0;
        children[i]->exit_sent = 0;
        update_interest(children[i]);
    }
    if (why)
        say("petreld (pid %d) detached: %s", (int)owner_pid, why);
}

static void flush_owner(void)
{
    size_t done = 0;
    while (owner >= 0 && done < out_len) {
        ssize_t n = send(owner, out_buf + done, out_len - done, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            done += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        owner_detach("write failed");
        return;
    }
    memmove(out_buf, out_buf + done, out_len - done);
    out_len -= done;
}

/* ---- console bytes ------------------------------------------------------------------------- */

/* The time of the read that produced byte `offset`, and the end of that read. */
static struct mark mark_of(const struct child *c, uint64_t offset)
{
    for (unsigned k = 0; k < c->mark_count; k++) {
        const struct mark *m = &c->marks[(c->mark_head + MARKS - c->mark_count + k) % MARKS];
        if (m->end > offset)
            return *m;
    }
    return (struct mark){ c->end, now_ms() };
}

/* Frames what the owner has not been sent of one watched console, a read at a time; nothing
 * while the owner has paused it. */
static void frame_output(struct child *c)
{
    while (!c->paused && out_len < OUT_LOW && c->sent < c->end) {
        if (c->sent < ring_first(c))
            c->sent = ring_first(c); /* overwritten: the owner sees the offset jump */
        struct mark m = mark_of(c, c->sent);
        uint64_t stop = m.end < c->end ? m.end : c->end;
        if (stop - c->sent > OUTPUT_CHUNK)
            stop = c->sent + OUTPUT_CHUNK;
        size_t len = (size_t)(stop - c->sent);
        unsigned char *at = frame_begin('O', 4 + 8 + 8 + len);
        put_u32(at, (uint32_t)c->pid);
        put_u64(at + 4, c->sent);
        put_u64(at + 12, (uint64_t)m.time);
        size_t from = (size_t)(c->sent % c->ring_size);
        size_t first = len < c->ring_size - from ? len : c->ring_size - from;
        memcpy(at + 20, c->ring + from, first);
        memcpy(at + 20 + first, c->ring, len - first);
        c->sent = stop;
    }
}

/* The exit, once everything the tender wrote has been framed. */
static void frame_exit(struct child *c)
{
    if (!c->watched || c->exit_sent || !settled(c) || c->sent < c->end || c->exec_failed)
        return;
    unsigned char *at = frame_begin('X', 16);
    put_u32(at, (uint32_t)c->pid);
    put_u32(at + 4, (uint32_t)c->status);
    put_u64(at + 8, (uint64_t)c->exited);
    c->exit_sent = 1;
}

/* How many bytes may be read now: while an owner watches, never over bytes it was not sent
 * (it reads slower than the guest writes: the tender waits, as it would on a FIFO); with
 * nobody attached, the whole ring (the oldest bytes are overwritten). */
static size_t console_room(const struct child *c)
{
    size_t from = (size_t)(c->end % c->ring_size);
    size_t room = c->ring_size - from;
    if (owner >= 0 && c->watched) {
        uint64_t unsent = c->end - c->sent;
        uint64_t free_bytes = unsent >= c->ring_size / 2 ? 0 : c->ring_size / 2 - unsent;
        if (free_bytes < room)
            room = (size_t)free_bytes;
    }
    return room;
}

static int reading(const struct child *c)
{
    return c->console >= 0 && !c->paused && !c->resting && console_room(c) > 0;
}

/* Keeps the epoll set equal to the consoles that are reading(). Called wherever that may
 * change: a read (the end moves), framing (what was sent moves), a watch, pause or resume, the
 * owner leaving, a console closing. A console not reading is removed, not left with no events:
 * epoll reports a hang-up (a tender that has exited) whatever was asked for. */
static void update_interest(struct child *c)
{
    int want = reading(c);
    if (want == c->polled)
        return;
    epoll_set(want ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, c->console, EPOLLIN, c);
    c->polled = want;
}

/* The child may now have frames for the owner: more bytes, a new watch, a resume, its end. */
static void mark_due(struct child *c)
{
    if (owner >= 0 && c->watched)
        list_append(&owner_due, &c->due);
}

static void close_console(struct child *c)
{
    if (c->console >= 0) {
        if (c->polled)
            epoll_set(EPOLL_CTL_DEL, c->console, 0, NULL);
        c->polled = 0;
        close(c->console);
        c->console = -1;
        list_remove(&c->draining);
        list_remove(&c->rest);
        c->resting = 0;
        mark_due(c); /* it may have settled: its exit is due once its bytes are */
    }
}

/* Frames what the due children have for the owner, the longest waiting first, until the queue
 * holds OUT_LOW. A child left with bytes to frame only ever is because the queue is full
 * (frame_output stops at nothing else; frame_exit frames an exit whenever one is due, and
 * otherwise a later read, close, reap or resume marks the child again), so it goes back to
 * the end of the list and the pass stops. */
static void serve_owner(void)
{
    while (owner >= 0 && out_len < OUT_LOW && !list_empty(&owner_due)) {
        struct child *c = CHILD_OF(owner_due.next, due);
        list_remove(&c->due);
        if (!c->watched)
            continue;
        frame_output(c);
        frame_exit(c);
        update_interest(c); /* what was sent moved: the ring may have room again */
        if (!c->paused && c->sent < c->end)
            list_append(&owner_due, &c->due);
    }
}

static void read_console(struct child *c)
{
    if (!c->ring) {
        c->ring = malloc(c->ring_size);
        c->marks = calloc(MARKS, sizeof *c->marks);
        if (!c->ring || !c->marks)
            die("malloc");
    }
    size_t room = console_room(c);
    if (room == 0)
        return;
    ssize_t n = read(c->console, c->ring + c->end % c->ring_size, room);
    if (n > 0) {
        c->end += (uint64_t)n;
        mark_due(c);
        if ((size_t)n < room) {
            c->resting = 1;
            c->rest_until = mono_ms() + REST_MS;
            list_append(&resting, &c->rest);
        }
        update_interest(c);
        /* Reads within the same millisecond share a time: one mark, so one frame for them. */
        int64_t now = now_ms();
        struct mark *last = c->mark_count ? &c->marks[(c->mark_head + MARKS - 1) % MARKS] : NULL;
        if (last && last->time == now) {
            last->end = c->end;
            return;
        }
        c->marks[c->mark_head] = (struct mark){ c->end, now };
        c->mark_head = (c->mark_head + 1) % MARKS;
        if (c->mark_count < MARKS)
            c->mark_count++;
        return;
    }
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    close_console(c); /* end of file: every writer (the tender) has gone; or a read error */
}

/* ---- requests ---------------------------------------------------------------------------- */

static sigset_t child_mask;

static void spawn(const unsigned char *body, size_t len)
{
    if (len < 17) {
        owner_detach("short spawn request");
        return;
    }
    uint32_t id = get_u32(body), argc = get_u32(body + 4), envc = get_u32(body + 8);
    uint32_t ring_size = get_u32(body + 12);
    char kind = (char)body[16];
    if (argc < 1 || argc > 65536 || envc > 65536 || ring_size > MAX_RING || (kind != 'H' && kind != 'A')) {
        owner_detach("bad spawn counts, ring size or console kind");
        return;
    }
    size_t total = 3 + argc + envc;
    char **strings = calloc(total, sizeof *strings);
    char **argv = calloc(argc + 1, sizeof *argv);
    char **env = calloc(envc + 1, sizeof *env);
    if (!strings || !argv || !env)
        die("calloc");
    if (split_strings((const char *)body + 17, (const char *)body + len, strings, total) != 0) {
        owner_detach("malformed strings in spawn request");
        goto done;
    }
    memcpy(argv, strings + 3, argc * sizeof *argv);
    memcpy(env, strings + 3 + argc, envc * sizeof *env);

    int ours = -1, theirs;
    if (kind == 'A') {
        theirs = open(strings[0], O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
    } else {
        /* Our read end first, so the tender's open finds a reader, then theirs. */
        ours = open(strings[0], O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
        if (ours >= 0)
            (void)fcntl(ours, F_SETPIPE_SZ, PIPE_BYTES);
        theirs = ours < 0 ? -1 : open_fifo_writer(strings[0]);
    }
    if (theirs < 0) {
        int saved = errno;
        if (ours >= 0)
            close(ours);
        unsigned char *at = frame_begin('E', 9);
        put_u32(at, id);
        at[4] = 'C';
        put_u32(at + 5, (uint32_t)saved);
        goto done;
    }
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0) {
        int saved = errno;
        close(theirs);
        if (ours >= 0)
            close(ours);
        unsigned char *at = frame_begin('E', 9);
        put_u32(at, id);
        at[4] = 'X';
        put_u32(at + 5, (uint32_t)saved);
        goto done;
    }
    int fds[3] = { theirs, theirs, theirs };
    pid_t pid = start_child(fds, report[1], argv, env, &child_mask, getpid());
    int fork_errno = errno;
    close(report[1]);
    close(theirs);
    int failed = pid < 0 ? fork_errno : exec_result(report[0]);
    if (pid < 0)
        close(report[0]);

    struct child *c = NULL;
    if (pid > 0) {
        /* Also a child whose exec failed: it is reaped with the others, never reported. */
        c = calloc(1, sizeof *c);
        if (!c)
            die("calloc");
        c->pid = pid;
        c->tag = strdup(strings[1]);
        c->meta = strdup(strings[2]);
        if (!c->tag || !c->meta)
            die("strdup");
        c->console = failed ? -1 : ours;
        c->exec_failed = failed != 0;
        c->started = now_ms();
        c->ring_size = ring_size ? ring_size : DEFAULT_RING;
        c->watched = 1;
        child_add(c);
        update_interest(c);
    }
    if (failed) {
        if (ours >= 0)
            close(ours);
        unsigned char *at = frame_begin('E', 9);
        put_u32(at, id);
        at[4] = 'X';
        put_u32(at + 5, (uint32_t)failed);
    } else {
        send_u32_i32('P', id, pid);
    }
done:
    free(argv);
    free(env);
    free(strings);
}

static void list_children(void)
{
    uint32_t count = 0;
    for (size_t i = 0; i < n_children; i++) {
        struct child *c = children[i];
        if (c->exec_failed)
            continue;
        size_t tag = strlen(c->tag) + 1, meta = strlen(c->meta) + 1;
        unsigned char *at = frame_begin('C', 4 + 1 + 4 + 8 * 5 + tag + meta);
        put_u32(at, (uint32_t)c->pid);
        at[4] = settled(c) ? 'X' : 'R';
        put_u32(at + 5, (uint32_t)c->status);
        put_u64(at + 9, (uint64_t)c->started);
        put_u64(at + 17, (uint64_t)c->exited);
        put_u64(at + 25, ring_first(c));
        put_u64(at + 33, c->end);
        put_u64(at + 41, c->acked);
        memcpy(at + 49, c->tag, tag);
        memcpy(at + 49 + tag, c->meta, meta);
        count++;
    }
    put_u32(frame_begin('L', 4), count);
}

static void handle_request(const unsigned char *body, size_t len)
{
    char op = (char)body[0];
    const unsigned char *arg = body + 1;
    len -= 1;
    if (op == 'S') {
        spawn(arg, len);
        return;
    }
    if (op == 'L' && len == 0) {
        list_children();
        return;
    }
    if (op == 'H') { /* a second hello is harmless */
        send_u32_i32('H', VERSION, getpid());
        return;
    }
    size_t want = op == 'K' ? 8 : op == 'A' ? 12 : 4;
    if (!strchr("KWPRAF", op) || op == '\0' || len != want) {
        owner_detach("unknown request or wrong length");
        return;
    }
    pid_t pid = (pid_t)get_u32(arg);
    struct child *c = child_find(pid);
    if (!c || c->exec_failed) {
        if (op != 'K')
            send_pid('U', pid);
        return;
    }
    switch (op) {
    case 'K':
        if (!c->reaped)
            kill(pid, (int)get_u32(arg + 4));
        break;
    case 'W': {
        c->watched = 1;
        c->exit_sent = 0;
        c->sent = ring_first(c);
        unsigned char *at = frame_begin('W', 28);
        put_u32(at, (uint32_t)pid);
        put_u64(at + 4, ring_first(c));
        put_u64(at + 12, c->end);
        put_u64(at + 20, c->acked);
        mark_due(c); /* after the W frame: the ring, then live output, then the exit */
        update_interest(c);
        break;
    }
    case 'P':
        c->paused = 1;
        update_interest(c);
        break;
    case 'R':
        c->paused = 0;
        mark_due(c);
        update_interest(c);
        break;
    case 'A': {
        uint64_t offset = get_u64(arg + 4);
        if (offset > c->end)
            offset = c->end;
        if (offset > c->acked)
            c->acked = offset;
        break;
    }
    case 'F':
        if (settled(c))
            child_free(c);
        break;
    }
}

static void read_owner(void)
{
    for (;;) {
        ssize_t got = recv(owner, in_buf + in_have, MAX_FRAME + 4 - in_have, MSG_DONTWAIT);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (got <= 0) {
            owner_detach(got == 0 ? NULL : "read failed");
            return;
        }
        in_have += (size_t)got;
        size_t used = 0;
        while (owner >= 0 && in_have - used >= 4) {
            uint32_t len = get_u32(in_buf + used);
            if (len < 1 || len > MAX_FRAME) {
                owner_detach("frame length out of range");
                return;
            }
            if (in_have - used - 4 < len)
                break;
            handle_request(in_buf + used + 4, len);
            used += 4 + len;
        }
        if (owner < 0)
            return;
        memmove(in_buf, in_buf + used, in_have - used);
        in_have -= used;
    }
}

/* A new connection: its first frame must be a hello of our version; it becomes the owner
 * unless there is one. Read with a short wait: petreld sends the hello as it connects. */
static void accept_connection(int listener)
{
    int fd = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0)
        return;
    struct ucred cred;
    socklen_t cred_len = sizeof cred;
    pid_t peer = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) == 0 ? cred.pid : 0;
    unsigned char hello[9];
    size_t have = 0;
    while (have < sizeof hello) {
        struct pollfd p = { fd, POLLIN, 0 };
        if (poll(&p, 1, 2000) <= 0)
            break;
        ssize_t n = recv(fd, hello + have, sizeof hello - have, 0);
        if (n <= 0)
            break;
        have += (size_t)n;
    }
    if (have < sizeof hello || get_u32(hello) != 5 || hello[4] != 'H' || get_u32(hello + 5) != VERSION) {
        say("connection from pid %d refused: no hello of version %d", (int)peer, VERSION);
        close(fd);
        return;
    }
    if (owner >= 0) {
        unsigned char busy[9];
        put_u32(busy, 5);
        busy[4] = 'B';
        put_u32(busy + 5, (uint32_t)owner_pid);
        ssize_t ignored = send(fd, busy, sizeof busy, MSG_NOSIGNAL | MSG_DONTWAIT);
        (void)ignored;
        close(fd);
        return;
    }
    int flags = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    /* What the kernel buffers towards petreld is in flight like our queue: a console that
     * petreld pauses keeps arriving until both are empty, so both are kept small. */
    int sndbuf = OUT_LOW;
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
    owner = fd;
    owner_pid = peer;
    owner_events = EPOLLIN;
    epoll_set(EPOLL_CTL_ADD, owner, owner_events, &tag_owner);
    send_u32_i32('H', VERSION, getpid());
}

/* ---- exits and the end ----------------------------------------------------------------- */

static void reap(void)
{
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        struct child *c = child_find(pid);
        if (!c)
            continue;
        if (c->exec_failed) { /* already answered with E */
            child_free(c);
            continue;
        }
        c->reaped = 1;
        c->status = status;
        c->exited = now_ms();
        c->drain_deadline = mono_ms() + DRAIN_MS;
        if (c->console >= 0)
            list_append(&draining, &c->draining);
        else
            mark_due(c); /* settled now: its exit is due */
    }
}

/* Whether our socket is still the one at its path: if the run directory was removed nobody
 * can attach again, so the tenders must not outlive us. */
static int socket_still_ours(void)
{
    struct stat st;
    return stat(socket_path, &st) == 0 && st.st_dev == socket_dev && st.st_ino == socket_ino;
}

static void end_all(const char *why)
{
    say("ending with %zu children: %s", n_children, why);
    for (size_t i = 0; i < n_children; i++)
        if (!children[i]->reaped)
            kill(children[i]->pid, SIGKILL);
    exit(0);
}

static int listen_at(const char *dir)
{
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    int n = snprintf(addr.sun_path, sizeof addr.sun_path, "%s/sock", dir);
    if (n < 0 || (size_t)n >= sizeof addr.sun_path) {
        errno = ENAMETOOLONG;
        die("socket path");
    }
    memcpy(socket_path, addr.sun_path, sizeof socket_path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        die("socket");
    unlink(socket_path); /* a socket left by a holder that died: we hold the lock now */
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0)
        die("bind");
    if (chmod(socket_path, 0600) != 0)
        die("chmod");
    if (listen(fd, 16) != 0)
        die("listen");
    struct stat st;
    if (stat(socket_path, &st) != 0)
        die("stat");
    socket_dev = st.st_dev;
    socket_ino = st.st_ino;
    return fd;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "--idle-exit-ms") == 0) {
        char *end;
        idle_exit_ms = strtol(argv[2], &end, 10);
        if (*end != '\0' || idle_exit_ms < 0) {
            fprintf(stderr, "petrel-holder: --idle-exit-ms takes milliseconds\n");
            return 2;
        }
        argv += 2;
        argc -= 2;
    }
    if (argc != 2) {
        fprintf(stderr, "usage: petrel-holder [--idle-exit-ms N] DIR\n");
        return 2;
    }
    const char *dir = argv[1];
    if (dir[0] != '/') {
        fprintf(stderr, "petrel-holder: DIR must be an absolute path\n");
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/log", dir);
    log_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (log_fd < 0) {
        fprintf(stderr, "petrel-holder: %s: %s\n", path, strerror(errno));
        return 2;
    }
    snprintf(path, sizeof path, "%s/lock", dir);
    int lock = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lock < 0)
        die("open lock");
    if (flock(lock, LOCK_EX | LOCK_NB) != 0) {
        if (errno == EWOULDBLOCK)
            return 0; /* a holder of this directory runs: petreld connects to it */
        die("flock");
    }
    int listener = listen_at(dir);
    signal(SIGPIPE, SIG_IGN);

    /* The parent returns to petreld (or whoever started us) once we listen; the child holds.
     * Our own session: a terminal's or a process group's signals are not for us. */
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid > 0)
        _exit(0);
    setsid();
    if (chdir("/") != 0)
        die("chdir");
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(log_fd, 2) < 0)
        die("standard descriptors");
    close(null);
    say("holding %s", dir);

    sigemptyset(&child_mask);
    sigaddset(&child_mask, SIGCHLD);
    if (sigprocmask(SIG_BLOCK, &child_mask, NULL) != 0)
        die("sigprocmask");
    int sfd = signalfd(-1, &child_mask, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0)
        die("signalfd");
    in_buf = xrealloc(NULL, MAX_FRAME + 4);

    epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    if (epoll_fd < 0)
        die("epoll_create1");
    epoll_set(EPOLL_CTL_ADD, listener, EPOLLIN, &tag_listener);
    epoll_set(EPOLL_CTL_ADD, sfd, EPOLLIN, &tag_signals);
    struct epoll_event *events = NULL;
    size_t cap_events = 0;
    struct child **ready = NULL; /* the consoles among the events */
    /* A short idle time (tests) is checked as often as it lasts. */
    const int64_t tick = idle_exit_ms > 0 && idle_exit_ms < WATCHDOG_MS ? idle_exit_ms : WATCHDOG_MS;
    int64_t idle_since = mono_ms(), next_watchdog = mono_ms() + tick;
    for (;;) {
        /* Drain deadlines first (the list is in deadline order), so the exit of a console closed
         * here is framed in this pass. */
        int64_t now = mono_ms();
        while (!list_empty(&draining)) {
            struct child *c = CHILD_OF(draining.next, draining);
            if (now < c->drain_deadline)
                break;
            say("console of pid %d still open %d ms after its exit: closed", (int)c->pid, DRAIN_MS);
            close_console(c);
        }
        while (!list_empty(&resting)) {
            struct child *c = CHILD_OF(resting.next, rest);
            if (now < c->rest_until)
                break;
            list_remove(&c->rest);
            c->resting = 0;
            update_interest(c);
        }
        /* The owner's queue: due consoles are framed while there is room; again as long as the
         * socket takes it all and more is due (nothing else would wake us for it). */
        while (owner >= 0) {
            serve_owner();
            flush_owner();
            if (owner < 0 || list_empty(&owner_due) || out_len >= OUT_LOW)
                break;
        }
        if (now >= next_watchdog) {
            next_watchdog = now + tick;
            if (!socket_still_ours())
                end_all("the socket was removed or replaced");
            if (owner >= 0 || n_children > 0)
                idle_since = now;
            else if (now - idle_since >= idle_exit_ms) {
                unlink(socket_path);
                say("idle: nobody attached, nothing held");
                return 0;
            }
        }

        if (owner >= 0) {
            uint32_t want = EPOLLIN | (out_len > 0 ? EPOLLOUT : 0);
            if (want != owner_events) {
                epoll_set(EPOLL_CTL_MOD, owner, want, &tag_owner);
                owner_events = want;
            }
        }
        /* Room for every descriptor at once: one wake-up sees all that is ready, as poll did. */
        if (cap_events < 3 + n_children) {
            cap_events = 2 * (3 + n_children);
            events = xrealloc(events, cap_events * sizeof *events);
            ready = xrealloc(ready, cap_events * sizeof *ready);
        }
        int timeout = (int)(next_watchdog - now);
        if (!list_empty(&draining)) {
            int64_t deadline = CHILD_OF(draining.next, draining)->drain_deadline;
            if (deadline - now < timeout)
                timeout = (int)(deadline - now);
        }
        if (!list_empty(&resting)) {
            int64_t until = CHILD_OF(resting.next, rest)->rest_until;
            if (until - now < timeout)
                timeout = (int)(until - now);
        }
        if (timeout < 0)
            timeout = 0;
        int n = epoll_wait(epoll_fd, events, (int)cap_events, timeout);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            die("epoll_wait");
        }
        int owner_ready = 0, signals_ready = 0, listener_ready = 0;
        size_t n_ready = 0;
        for (int k = 0; k < n; k++) {
            void *what = events[k].data.ptr;
            if (what == &tag_owner)
                owner_ready = (events[k].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) != 0;
            else if (what == &tag_signals)
                signals_ready = 1;
            else if (what == &tag_listener)
                listener_ready = 1;
            else
                ready[n_ready++] = what;
        }
        /* The owner first: a petreld that died before a new one connected is seen as gone. */
        if (owner_ready && owner >= 0)
            read_owner();
        /* Consoles before exits, so a tender's last bytes are read before it counts as ended.
         * No child of this list was freed by a request: only a settled child is (F), and its
         * console was closed, so out of the set, before this wait. A request may have paused
         * one or used up its room: only a console still polled is read. */
        for (size_t k = 0; k < n_ready; k++)
            if (ready[k]->polled)
                read_console(ready[k]);
        if (signals_ready) {
            struct signalfd_siginfo info;
            while (read(sfd, &info, sizeof info) > 0)
                ;
            reap();
        }
        if (listener_ready)
            accept_connection(listener);
    }
}
