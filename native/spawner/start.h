/* start.h: what petrel-spawner and petrel-holder do alike: the little-endian frame fields of
 * their protocols, opening a console FIFO's write end, and starting a child with vfork. */
#ifndef PETREL_START_H
#define PETREL_START_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

void put_u32(unsigned char *at, uint32_t v);
void put_u64(unsigned char *at, uint64_t v);
uint32_t get_u32(const unsigned char *at);
uint64_t get_u64(const unsigned char *at);

/* Opens the write end of the FIFO at `path` without blocking (ENXIO when nobody reads it, not a
 * hang), refuses anything but a FIFO (ENOTSUP) or a symlink (ELOOP), then makes it blocking: a
 * tender must never see EAGAIN (solo5.md §1.12). Returns the descriptor or -1 with errno. */
int open_fifo_writer(const char *path);

/* Splits the `count` NUL-terminated strings at [at, end) into `out`: 0, -1 when a string is
 * unterminated, -2 when bytes are left over. */
int split_strings(const char *at, const char *end, char **out, size_t count);

/* Starts argv[0] (searched on the PATH of `env` when it has no slash) with descriptors 0-2 from
 * `fds`, default signal dispositions and `mask` unblocked. With `parent` non-zero the child
 * gets SIGKILL when its parent dies (PR_SET_PDEATHSIG before exec, so this holds for any
 * program) and gives up if `parent` is already gone. An exec failure's errno is written to
 * `report` (close-on-exec: success closes it unwritten). Returns the pid or -1 with errno. */
pid_t start_child(const int fds[3], int report, char **argv, char **env, const sigset_t *mask, pid_t parent);

/* Reads the errno a failed exec wrote to `report` (closing it): 0 when the exec succeeded. */
int exec_result(int report);

#endif
