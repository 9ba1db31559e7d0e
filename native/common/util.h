/* util.h: how petrel-hvt reports errors. Every message of its own carries the
 * "<program>: " prefix of err(3), as solo5-hvt's do (solo5.md §1, §1.10). */
#ifndef PETREL_UTIL_H
#define PETREL_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* basename of argv[0]; messages and the usage use it, as solo5's tenders do. */
extern const char *prog;

/* "prog: message", exit 1: the status of every tender-side failure (§1.9). */
_Noreturn void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* As die(), followed by ": <strerror(errno)>". */
_Noreturn void die_errno(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Without the prefix: solo5's block and net I/O errors are printed bare (§1.10). */
_Noreturn void die_bare(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "prog: message", and the run goes on. */
void warn_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void warn_errno(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Decimal parsers with the leniency of sscanf: leading blanks and a sign are
 * accepted, trailing characters ignored. They return 0 when no digit follows. */
int parse_i64(const char *s, int64_t *out);
int parse_u64(const char *s, uint64_t *out);

/* The next blank-delimited word of s, at most max characters, as sscanf's
 * "%Ns" reads it: leading blanks skipped, cut at the first blank. Returns
 * its length (0: no word). out must hold max + 1 bytes. */
size_t scan_word(const char *s, char *out, size_t max);

#endif
