/* util.c: error reporting and number parsing shared by every part of the tender.
 * A message is composed first and written with one write(2), so a line from the
 * tender is never interleaved with the guest's console output mid-line. */
#include "util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *prog = "petrel-hvt";

static void emit(int prefix, int with_errno, int saved_errno, const char *fmt, va_list ap)
{
    char line[1024];
    size_t n = 0;
    int r;

    if (prefix) {
        r = snprintf(line, sizeof line, "%s: ", prog);
        n = r > 0 ? (size_t)r : 0;
    }
    r = vsnprintf(line + n, sizeof line - n, fmt, ap);
    if (r > 0)
        n += (size_t)r;
    if (n > sizeof line - 2)
        n = sizeof line - 2;
    if (with_errno) {
        r = snprintf(line + n, sizeof line - n, ": %s", strerror(saved_errno));
        if (r > 0)
            n += (size_t)r;
        if (n > sizeof line - 2)
            n = sizeof line - 2;
    }
    line[n++] = '\n';
    /* Best effort: there is nowhere else to report a failing stderr. */
    while (n > 0) {
        ssize_t w = write(2, line, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        memmove(line, line + w, n - (size_t)w);
        n -= (size_t)w;
    }
}

void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    emit(1, 0, 0, fmt, ap);
    va_end(ap);
    exit(1);
}

void die_errno(const char *fmt, ...)
{
    int e = errno;
    va_list ap;
    va_start(ap, fmt);
    emit(1, 1, e, fmt, ap);
    va_end(ap);
    exit(1);
}

void die_bare(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    emit(0, 0, 0, fmt, ap);
    va_end(ap);
    exit(1);
}

void warn_msg(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    emit(1, 0, 0, fmt, ap);
    va_end(ap);
}

void warn_errno(const char *fmt, ...)
{
    int e = errno;
    va_list ap;
    va_start(ap, fmt);
    emit(1, 1, e, fmt, ap);
    va_end(ap);
}

static int blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

size_t scan_word(const char *s, char *out, size_t max)
{
    size_t n = 0;
    while (blank(*s))
        s++;
    while (n < max && s[n] != '\0' && !blank(s[n])) {
        out[n] = s[n];
        n++;
    }
    out[n] = '\0';
    return n;
}

/* Digits after optional blanks and sign; wraps like an unsigned C conversion
 * would, which is what makes --mem=-5 a huge size (solo5.md §1.3). */
static int parse_digits(const char *s, int *negative, uint64_t *out)
{
    uint64_t v = 0;
    int any = 0;

    while (blank(*s))
        s++;
    *negative = 0;
    if (*s == '+' || *s == '-')
        *negative = *s++ == '-';
    for (; *s >= '0' && *s <= '9'; s++) {
        uint64_t d = (uint64_t)(*s - '0');
        v = v > (UINT64_MAX - d) / 10 ? UINT64_MAX : v * 10 + d;
        any = 1;
    }
    *out = v;
    return any;
}

int parse_i64(const char *s, int64_t *out)
{
    int neg;
    uint64_t v;
    if (!parse_digits(s, &neg, &v))
        return 0;
    if (v > (uint64_t)INT64_MAX)
        v = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return 1;
}

int parse_u64(const char *s, uint64_t *out)
{
    int neg;
    uint64_t v;
    if (!parse_digits(s, &neg, &v))
        return 0;
    *out = neg ? 0 - v : v;
    return 1;
}
