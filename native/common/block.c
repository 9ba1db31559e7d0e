/* block.c: the block module: --block and --block-sector-size (solo5.md §1.4),
 * and BLOCK_WRITE / BLOCK_READ (§3.11, §3.13). The tender checks bounds only,
 * not alignment, exactly as solo5-hvt: any guest solo5 accepts works here. */
#include "devices.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "hypercalls.h"
#include "util.h"

#define PATH_MAX_WORD 4096

bool block_option(const char *word, const struct manifest *m)
{
    char name[MFT_NAME_SIZE];
    const char *rest;

    if (strncmp(word, "--block:", 8) == 0 && (rest = device_name(word + 8, name)) != NULL) {
        /* PATH is cut at the first blank, as in solo5; the daemon never
         * generates such a path. */
        char path[PATH_MAX_WORD + 1];
        if (scan_word(rest, path, PATH_MAX_WORD) == 0)
            return false;
        int i = device_declared(m, name, MFT_BLOCK_BASIC);
        if (i < 0)
            return false;
        /* Read-write, no locking: the daemon owns exclusivity (§3.13). A repeated
         * name replaces the earlier file, whose descriptor simply stays open. */
        int fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0)
            die_errno("Could not open block device: %s", path);
        off_t cap = lseek(fd, 0, SEEK_END);
        if (cap < 0)
            die_errno("%s: Could not determine capacity", path);
        devices[i].fd = fd;
        devices[i].kind = MFT_BLOCK_BASIC;
        devices[i].capacity = (uint64_t)cap;
        return true;
    }
    if (strncmp(word, "--block-sector-size:", 20) == 0 && (rest = device_name(word + 20, name)) != NULL) {
        uint64_t size;
        if (!parse_u64(rest, &size))
            return false;
        int i = device_declared(m, name, MFT_BLOCK_BASIC);
        if (i < 0)
            return false;
        /* It must fit the manifest's u16 block_size, hence at most 32768. */
        if (size < 512 || size > 32768 || (size & (size - 1)) != 0) {
            warn_msg("Block size must be a multiple of 2 greater than or equal 512");
            return false;
        }
        devices[i].block_size = (uint32_t)size;
        return true;
    }
    return false;
}

/* The BLOCK_* argument structure: handle, offset, data, len, ret (40 bytes). */
struct block_args {
    uint64_t handle, offset, data, len;
    int32_t ret;
};
#define BLOCK_ARGS_SIZE 40

static const struct device *block_device(uint64_t handle)
{
    if (handle >= MFT_MAX_ENTRIES || devices[handle].kind != MFT_BLOCK_BASIC || devices[handle].fd < 0)
        return NULL;
    return &devices[handle];
}

static int in_range(const struct device *d, const struct block_args *a)
{
    return d != NULL && a->len <= (uint64_t)INT64_MAX && a->offset < d->capacity &&
           a->len <= d->capacity - a->offset;
}

static void block_io(const struct guest *g, uint64_t gpa, int write)
{
    uint8_t *p = guest_out(g, gpa, BLOCK_ARGS_SIZE, write ? "BLOCK_WRITE" : "BLOCK_READ");
    struct block_args a;
    memcpy(&a, p, 32);
    const struct device *d = block_device(a.handle);
    int32_t ret = SOLO5_R_EINVAL;

    if (in_range(d, &a)) {
        ssize_t n;
        if (write) {
            const void *buf = guest_in(g, a.data, a.len, "BLOCK_WRITE data");
            n = pwrite(d->fd, buf, a.len, (off_t)a.offset);
            if (n < 0)
                die_bare("Fatal error when writing: %s", strerror(errno));
            if ((uint64_t)n != a.len)
                die_bare("Fatal error: wrote only %zd out of %lu bytes", n, (unsigned long)a.len);
        } else {
            void *buf = guest_out(g, a.data, a.len, "BLOCK_READ data");
            n = pread(d->fd, buf, a.len, (off_t)a.offset);
            if (n < 0)
                die_bare("Fatal error when reading: %s", strerror(errno));
            if ((uint64_t)n != a.len)
                die_bare("Fatal error: read only %zd out of %lu bytes", n, (unsigned long)a.len);
        }
        ret = SOLO5_R_OK;
    }
    memcpy(p + 32, &ret, sizeof ret);
}

void hc_block_write(const struct guest *g, uint64_t gpa)
{
    block_io(g, gpa, 1);
}

void hc_block_read(const struct guest *g, uint64_t gpa)
{
    block_io(g, gpa, 0);
}
