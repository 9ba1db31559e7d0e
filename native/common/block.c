/* block.c: the block module's options, --block and --block-sector-size
 * (solo5.md §1.4): the backing file is opened and sized here, as in solo5. */
#include "devices.h"

#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

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
