/* canary.h: what the canary's parts share: console output, time, the
 * minimal C library a freestanding program needs, and the modes. */
#ifndef CANARY_H
#define CANARY_H

#include <stddef.h>
#include <stdint.h>

#include "hvt.h"

extern const struct hvt_boot_info *boot;

/* Saved by entry.S before anything else runs: rax rbx rcx rdx rsi rdi rbp rsp
 * r8-r15 (16 words), rflags, then the TSC. */
extern uint64_t entry_state[18];
#define ENTRY_RFLAGS 16
#define ENTRY_TSC 17

/* console.c: one static buffer, flushed with one PUTS. */
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

/* time and exits */
uint64_t walltime_ns(void);
uint64_t monotonic_ns(void); /* from the TSC, no exit */
void sleep_ns(uint64_t ns);  /* POLL until the TSC says the time has passed */
_Noreturn void halt(int status);

/* lib.c */
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

/* modes; argv[0] is the mode name */
_Noreturn void mode_hello(int argc, char **argv);
_Noreturn void mode_exit(int argc, char **argv);
_Noreturn void mode_wait(int argc, char **argv);
_Noreturn void mode_sleep(int argc, char **argv);
_Noreturn void mode_flood(int argc, char **argv);
_Noreturn void mode_oob(int argc, char **argv);
_Noreturn void mode_regs(int argc, char **argv);
_Noreturn void mode_blk(int argc, char **argv);
_Noreturn void mode_net_send(int argc, char **argv);
_Noreturn void mode_net_echo(int argc, char **argv);

#endif
