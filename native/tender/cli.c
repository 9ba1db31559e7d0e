/* cli.c: petrel-hvt's usage, ABI and memory size, with solo5-hvt's texts. */
#include "cli.h"

#include <stdio.h>

#include "util.h"

#define MIB (1ULL << 20)
#define MEM_ALIGN (2 * MIB)
#define MEM_MAX (1ULL << 32)

const struct abi hvt_abi = {.target = 1, .version = 2, .target_name = "solo5-hvt"};

static void usage(void)
{
    /* Note the trailing blank after "net": solo5 prints one after each module. */
    fprintf(stderr,
            "usage: %s [ CORE OPTIONS ] [ MODULE OPTIONS ] [ -- ] KERNEL [ ARGS ]\n"
            "KERNEL is the filename of the unikernel to run.\n"
            "ARGS are optional arguments passed to the unikernel.\n"
            "Core options:\n"
            "  [ --mem=512 ] (guest memory in MB)\n"
            "    --help (display this help)\n"
            "    --version (display version information)\n"
            "Compiled-in modules: core block net \n"
            "Compiled-in module options:\n"
            "    --block:NAME=PATH (attach block device/file at PATH as block storage NAME)\n"
            "  [ --block-sector-size:NAME=SECTORSIZE ] (set sector size for block device NAME; must be "
            "a power of two greater than or equal 512)\n"
            "    --net:NAME=IFACE | @NN (attach tap at IFACE or at fd @NN as network NAME)\n"
            "  [ --net-mac:NAME=HWADDR ] (set HWADDR for network NAME)\n",
            prog);
}

const struct cli hvt_cli = {.abi_version = 2, .usage = usage, .core_option = NULL};

uint64_t hvt_mem_size(int64_t mib)
{
    /* Unsigned on purpose: a negative size becomes huge and is refused by the
     * maximum below, as in solo5. */
    const uint64_t requested = (uint64_t)mib * MIB;
    uint64_t mem = requested & ~(MEM_ALIGN - 1);
    if (mem == 0)
        mem = MEM_ALIGN;
    if (mem != requested)
        warn_msg("adjusting memory to %llu bytes", (unsigned long long)mem);
    if (mem > MEM_MAX)
        die("guest memory size %llu bytes exceeds the max size %llu bytes", (unsigned long long)mem,
            MEM_MAX);
    return mem;
}
