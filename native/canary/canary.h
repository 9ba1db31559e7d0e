/* canary.h: what the canary's parts share: console output, time, the
 * minimal C library a freestanding program needs, the modes, and the
 * platform layer under them. One source serves both targets: hvt.c talks to
 * the tender through hypercalls, spt.c makes system calls itself; nothing
 * else knows which it runs on. */
#ifndef CANARY_H
#define CANARY_H

#include <stddef.h>
#include <stdint.h>

#include "solo5.h"

/* Saved by entry.S before anything else runs: rax rbx rcx rdx rsi rdi rbp rsp
 * r8-r15 (16 words), rflags, then the TSC. */
extern uint64_t entry_state[18];
#define ENTRY_RFLAGS 16
#define ENTRY_TSC 17

/* ---- the platform (hvt.c or spt.c) ---- */

/* First call, with what the tender passed in RDI. */
void plat_init(const void *boot_arg);
const char *plat_cmdline(void);
const struct mft *plat_manifest(void);
/* hvt: microseconds from the start of the VM to the guest's first
 * instruction (hvt.c). */
uint64_t plat_boot_us(void);
/* The second line of hello, what the platform can truthfully tell about its
 * start, and the wall clock. hvt (hello-hvt.c): "petrel-canary boot_us=N
 * walltime_ns=N". spt (spt.c), whose tender passes no start time:
 * "petrel-canary entry_ns=N walltime_ns=N", N the host's CLOCK_MONOTONIC when
 * the canary's code began. */
void plat_hello_line(void);
/* Write to the console; best effort. */
void plat_puts(const char *buf, size_t len);
/* Wait until a network device is readable or timeout_ns passed; returns the
 * ready set (bit h: the device with handle h). */
uint64_t plat_poll(uint64_t timeout_ns);
/* solo5 semantics and results (SOLO5_R_*): one whole sector at a sector
 * boundary; one frame. net_read returns the frame size in *len. */
int32_t plat_block_write(uint64_t handle, uint64_t offset, const void *buf, uint64_t len);
int32_t plat_block_read(uint64_t handle, uint64_t offset, void *buf, uint64_t len);
int32_t plat_net_write(uint64_t handle, const void *buf, uint64_t len);
int32_t plat_net_read(uint64_t handle, void *buf, uint64_t *len);
_Noreturn void plat_halt(int status);
uint64_t walltime_ns(void);
uint64_t monotonic_ns(void);

struct mode {
    const char *name;
    void (*run)(int argc, char **argv); /* never returns */
};
/* Modes only one platform has (regs, oob, forbidden). */
extern const struct mode plat_modes[];
extern const size_t plat_n_modes;

/* ---- console.c: one static buffer, flushed with one plat_puts ---- */
void put_s(const char *s);
void put_n(const char *s, size_t n);
void put_u(uint64_t v);
void put_i(int64_t v);
void put_x(uint64_t v); /* 0x-prefixed, lower case */
void put_mac(const uint8_t mac[6]);
void put_kv(const char *key, uint64_t hex_value); /* "key=0x...\n" */
size_t console_room(void);
void flush(void);
/* "petrel-canary <s>\n", flushed. */
void say(const char *s);
void sleep_ns(uint64_t ns); /* POLL until the monotonic clock says the time has passed */
_Noreturn void halt(int status); /* flush, then the platform's exit */

/* ---- lib.c ---- */
void *memcpy(void *restrict d, const void *restrict s, size_t n);
void *memmove(void *d, const void *s, size_t n);
void *memset(void *d, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t str_len(const char *s);
int str_eq(const char *a, const char *b);
int str_starts(const char *s, const char *prefix);
int parse_int(const char *s, int64_t *out);
uint64_t fnv1a(uint64_t h, const uint8_t *p, size_t n);
#define FNV_OFFSET 0xcbf29ce484222325ULL
/* The manifest entry the tender attached under this name and type, or NULL. */
const struct mft_entry *device(const char *name, uint32_t type, uint64_t *handle);
/* The attached manifest entry with this handle and type, or NULL. */
const struct mft_entry *device_at(uint64_t handle, uint32_t type);
/* Argument i, or the fallback; a number, or halt 2 with "bad number". */
const char *arg(int argc, char **argv, int i, const char *fallback);
int64_t int_arg(int argc, char **argv, int i, int64_t fallback);

/* ---- modes; argv[0] is the mode name ---- */
_Noreturn void mode_hello(int argc, char **argv);
_Noreturn void mode_exit(int argc, char **argv);
_Noreturn void mode_wait(int argc, char **argv);
_Noreturn void mode_sleep(int argc, char **argv);
_Noreturn void mode_count(int argc, char **argv);
_Noreturn void mode_flood(int argc, char **argv);
_Noreturn void mode_blk(int argc, char **argv);
_Noreturn void mode_net_send(int argc, char **argv);
_Noreturn void mode_net_echo(int argc, char **argv);

#endif
