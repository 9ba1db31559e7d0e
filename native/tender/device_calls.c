/* device_calls.c: the hypercalls of the block and net modules (solo5.md §3.11,
 * §3.13, §3.14). Every guest address goes through guest_in/guest_out. Block
 * I/O checks bounds only, not alignment, exactly as solo5-hvt: any guest
 * solo5 accepts works here. Frames are raw Ethernet. */
#include "device_calls.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "devices.h"
#include "hypercalls.h"
#include "util.h"

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

/* The NET_* argument structure: handle, data, len, ret (32 bytes). */
#define NET_ARGS_SIZE 32

static const struct device *net_device(uint64_t handle)
{
    if (handle >= MFT_MAX_ENTRIES || devices[handle].kind != MFT_NET_BASIC || devices[handle].fd < 0)
        return NULL;
    return &devices[handle];
}

void hc_net_write(const struct guest *g, uint64_t gpa)
{
    uint8_t *p = guest_out(g, gpa, NET_ARGS_SIZE, "NET_WRITE");
    uint64_t handle, data, len;
    memcpy(&handle, p, 8);
    memcpy(&data, p + 8, 8);
    memcpy(&len, p + 16, 8);
    const struct device *d = net_device(handle);
    int32_t ret = SOLO5_R_EINVAL;

    if (d != NULL) {
        const void *buf = guest_in(g, data, len, "NET_WRITE data");
        ssize_t n = write(d->fd, buf, len);
        /* A full queue drops the frame, which solo5's API allows; exiting would
         * turn a traffic burst into a dead VM. */
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != ENOBUFS && errno != EINTR)
            die_bare("Fatal error when writing: %s", strerror(errno));
        if (n >= 0 && (uint64_t)n != len)
            die_bare("Fatal error: wrote only %zd out of %lu bytes", n, (unsigned long)len);
        ret = SOLO5_R_OK;
    }
    memcpy(p + 24, &ret, sizeof ret);
}

void hc_net_read(const struct guest *g, uint64_t gpa)
{
    uint8_t *p = guest_out(g, gpa, NET_ARGS_SIZE, "NET_READ");
    uint64_t handle, data, len;
    memcpy(&handle, p, 8);
    memcpy(&data, p + 8, 8);
    memcpy(&len, p + 16, 8);
    const struct device *d = net_device(handle);
    int32_t ret = SOLO5_R_EINVAL;

    if (d != NULL) {
        void *buf = guest_out(g, data, len, "NET_READ data");
        ssize_t n = read(d->fd, buf, len);
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            die_bare("Fatal error when reading: %s", strerror(errno));
        if (n <= 0) {
            ret = SOLO5_R_AGAIN;
        } else {
            uint64_t got = (uint64_t)n;
            memcpy(p + 16, &got, 8);
            ret = SOLO5_R_OK;
        }
    }
    memcpy(p + 24, &ret, sizeof ret);
}

void device_calls_register(void)
{
    if (devices_have(MFT_BLOCK_BASIC)) {
        hypercall_register(HC_BLOCK_WRITE, hc_block_write);
        hypercall_register(HC_BLOCK_READ, hc_block_read);
    }
    if (devices_have(MFT_NET_BASIC)) {
        hypercall_register(HC_NET_WRITE, hc_net_write);
        hypercall_register(HC_NET_READ, hc_net_read);
    }
}
