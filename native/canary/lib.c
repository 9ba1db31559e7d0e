/* lib.c: the few C library functions a freestanding program needs. gcc may
 * emit calls to memcpy, memmove, memset and memcmp on its own, so they must
 * exist under those names. Byte loops: guest code runs slowly on kvm-pvm
 * hosts, but the canary moves only a few kilobytes. */
#include "canary.h"

void *memcpy(void *restrict d, const void *restrict s, size_t n)
{
    unsigned char *dp = d;
    const unsigned char *sp = s;
    while (n--)
        *dp++ = *sp++;
    return d;
}

void *memmove(void *d, const void *s, size_t n)
{
    unsigned char *dp = d;
    const unsigned char *sp = s;
    if (dp < sp) {
        while (n--)
            *dp++ = *sp++;
    } else {
        while (n--)
            dp[n] = sp[n];
    }
    return d;
}

void *memset(void *d, int c, size_t n)
{
    unsigned char *dp = d;
    while (n--)
        *dp++ = (unsigned char)c;
    return d;
}

int memcmp(const void *a, const void *b, size_t n)
{
    const unsigned char *x = a, *y = b;
    for (; n--; x++, y++)
        if (*x != *y)
            return *x < *y ? -1 : 1;
    return 0;
}

size_t str_len(const char *s)
{
    size_t n = 0;
    while (s[n])
        n++;
    return n;
}

int str_eq(const char *a, const char *b)
{
    while (*a && *a == *b)
        a++, b++;
    return *a == *b;
}

int str_starts(const char *s, const char *prefix)
{
    while (*prefix)
        if (*s++ != *prefix++)
            return 0;
    return 1;
}

int parse_int(const char *s, int64_t *out)
{
    int neg = 0;
    uint64_t v = 0;
    if (*s == '-' || *s == '+')
        neg = *s++ == '-';
    if (*s < '0' || *s > '9')
        return 0;
    while (*s >= '0' && *s <= '9')
        v = v * 10 + (uint64_t)(*s++ - '0');
    if (*s != '\0')
        return 0;
    *out = neg ? -(int64_t)v : (int64_t)v;
    return 1;
}

/* FNV-1a, 64-bit: the blk and regs modes report checksums the tests
 * recompute on the host. */
uint64_t fnv1a(uint64_t h, const uint8_t *p, size_t n)
{
    while (n--) {
        h ^= *p++;
        h *= 0x100000001b3ULL;
    }
    return h;
}

const struct mft_entry *device(const char *name, uint32_t type, uint64_t *handle)
{
    const struct mft *m = plat_manifest();
    for (uint32_t i = 0; i < m->entries; i++)
        if (m->e[i].type == type && m->e[i].attached && str_eq(m->e[i].name, name)) {
            *handle = i;
            return &m->e[i];
        }
    return NULL;
}

const struct mft_entry *device_at(uint64_t handle, uint32_t type)
{
    const struct mft *m = plat_manifest();
    if (handle >= m->entries || m->e[handle].type != type || !m->e[handle].attached)
        return NULL;
    return &m->e[handle];
}

const char *arg(int argc, char **argv, int i, const char *fallback)
{
    return i < argc ? argv[i] : fallback;
}

int64_t int_arg(int argc, char **argv, int i, int64_t fallback)
{
    int64_t v;
    if (i >= argc)
        return fallback;
    if (!parse_int(argv[i], &v)) {
        put_s("petrel-canary bad number ");
        put_s(argv[i]);
        put_s("\n");
        halt(2);
    }
    return v;
}
