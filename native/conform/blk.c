/* blk.c: a block device (solo5-spt.md §3.1, §3.4): the manifest copy gives its
 * capacity and sector size; whole sectors are written and read back with
 * pwrite64/pread64 on its hostfd; requests the bindings must refuse (past the
 * end, unaligned, not one sector) come back EINVAL without a system call, as
 * solo5's bindings do, since the filter would kill some of them.
 *   blk   sectors 0, 1 and the last get "conform sector N" and are read back;
 *         the test checks them in the file */
#include "conform.h"

static uint8_t buf[32768], back[32768]; /* the largest sector size */

static void fill(uint64_t sector, uint16_t size)
{
    memset(buf, 0, size);
    static const char text[] = "conform sector ";
    memcpy(buf, text, sizeof text - 1);
    decimal(buf + sizeof text - 1, sector);
}

void conform_blk(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    uint64_t h;
    const struct mft_entry *e = device("storage", MFT_BLOCK_BASIC, &h);
    check("storage attached", e != NULL, "no BLOCK_BASIC device 'storage' in the manifest copy");
    uint64_t capacity;
    uint16_t size;
    memcpy(&capacity, e->props, 8);
    memcpy(&size, e->props + 8, 2);
    put_s("conform blk: capacity=");
    put_u(capacity);
    put_s(" sector_size=");
    put_u(size);
    put_s("\n");
    check("capacity whole sectors", size >= 512 && capacity >= 3ULL * size && capacity % size == 0, "bad geometry");

    const uint64_t last = capacity / size - 1;
    const uint64_t sectors[3] = {0, 1, last};
    for (int i = 0; i < 3; i++) {
        fill(sectors[i], size);
        check("write", plat_block_write(h, sectors[i] * size, buf, size) == SOLO5_R_OK, "refused");
    }
    for (int i = 0; i < 3; i++) {
        fill(sectors[i], size);
        memset(back, 0xaa, size);
        check("read back", plat_block_read(h, sectors[i] * size, back, size) == SOLO5_R_OK &&
                               memcmp(back, buf, size) == 0,
              "different bytes");
    }
    check("read at the capacity refused",
          plat_block_read(h, capacity, back, size) == SOLO5_R_EINVAL, "not EINVAL");
    check("write at the capacity refused",
          plat_block_write(h, capacity, buf, size) == SOLO5_R_EINVAL, "not EINVAL");
    check("unaligned offset refused", plat_block_read(h, size / 2, back, size) == SOLO5_R_EINVAL, "not EINVAL");
    check("half a sector refused", plat_block_read(h, 0, back, size / 2u) == SOLO5_R_EINVAL, "not EINVAL");
    check("two sectors refused", plat_block_write(h, 0, buf, 2u * size) == SOLO5_R_EINVAL, "not EINVAL");
    halt(0);
}
