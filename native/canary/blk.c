/* blk.c: the blk mode (canary-blk, block device "storage"): write a pattern
 * to every sector (blk) or to the first and last (blk ends), read them back,
 * compare, and print an FNV-1a
 * checksum of what was read, which the test recomputes from the file on the
 * host. A read at the capacity must come back EINVAL (hvt: the tender's
 * bounds check, §3.11; spt: the platform's own, before any system call). */
#include "canary.h"

static uint8_t wbuf[32768], rbuf[32768]; /* the largest sector size (§1.4) */

/* The test computes the same bytes: (sector * 31 + index * 7 + 0x5a) & 0xff. */
static void pattern(uint8_t *p, uint64_t sector, uint64_t size)
{
    for (uint64_t j = 0; j < size; j++)
        p[j] = (uint8_t)(sector * 31 + j * 7 + 0x5a);
}

static _Noreturn void fail(const char *what, uint64_t sector, int32_t ret)
{
    put_s("petrel-canary blk ");
    put_s(what);
    put_s(" sector=");
    put_u(sector);
    put_s(" ret=");
    put_i(ret);
    put_s("\n");
    halt(3);
}

/* The i-th sector the mode visits: every one in order, or with "ends" only
 * the first and the last (for devices too large to sweep, such as a sparse
 * file beyond 4 GiB, whose last sector needs a 64-bit offset). */
static uint64_t visit(int ends, uint64_t i, uint64_t sectors)
{
    return ends && i == 1 ? sectors - 1 : i;
}

void mode_blk(int argc, char **argv)
{
    const int ends = str_eq(arg(argc, argv, 1, "all"), "ends");
    uint64_t h;
    const struct mft_entry *e = device("storage", MFT_BLOCK_BASIC, &h);
    if (e == NULL) {
        say("blk no storage device");
        halt(2);
    }
    uint64_t capacity;
    uint16_t size;
    memcpy(&capacity, e->props, 8);
    memcpy(&size, e->props + 8, 2);
    const uint64_t sectors = capacity / size;
    const uint64_t n = ends ? (sectors < 2 ? sectors : 2) : sectors;

    for (uint64_t i = 0; i < n; i++) {
        const uint64_t s = visit(ends, i, sectors);
        pattern(wbuf, s, size);
        int32_t r = plat_block_write(h, s * size, wbuf, size);
        if (r != SOLO5_R_OK)
            fail("write", s, r);
    }
    uint64_t sum = FNV_OFFSET;
    for (uint64_t i = 0; i < n; i++) {
        const uint64_t s = visit(ends, i, sectors);
        int32_t r = plat_block_read(h, s * size, rbuf, size);
        if (r != SOLO5_R_OK)
            fail("read", s, r);
        pattern(wbuf, s, size);
        if (memcmp(wbuf, rbuf, size) != 0)
            fail("mismatch", s, r);
        sum = fnv1a(sum, rbuf, size);
    }
    int32_t eof = plat_block_read(h, capacity, rbuf, size);

    put_s("petrel-canary blk sectors=");
    put_u(sectors);
    put_s(" sector_size=");
    put_u(size);
    put_s(" checksum=");
    put_x(sum);
    put_s(" eof_ret=");
    put_i(eof);
    put_s("\n");
    halt(0);
}
