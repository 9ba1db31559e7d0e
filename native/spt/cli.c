/* cli.c: petrel-spt's usage, ABI and memory size, with solo5-spt's texts. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "util.h"

const struct abi spt_abi = {.target = SPT_ABI_TARGET, .version = SPT_ABI_VERSION, .target_name = "solo5-spt"};

bool spt_exec_heap;

static void usage(void)
{
    /* solo5-spt's usage: no --version line (the option works all the same),
     * the net module before the block module, and a trailing blank after each
     * module name. */
    fprintf(stderr,
            "usage: %s [ CORE OPTIONS ] [ -- ] KERNEL [ ARGS ]\n"
            "KERNEL is the filename of the unikernel to run.\n"
            "ARGS are optional arguments passed to the unikernel.\n"
            "Core options:\n"
            "  [ --mem=512 ] (guest memory in MB)\n"
            "    --help (display this help)\n"
            "Compiled-in modules: core net block \n"
            "Compiled-in module options:\n"
            "    --x-exec-heap (make the heap executable). WARNING: This option is dangerous and not "
            "recommended as it makes the heap and stack executable.\n"
            "    --net:NAME=IFACE | @NN (attach tap at IFACE or at fd @NN as network NAME)\n"
            "  [ --net-mac:NAME=HWADDR ] (set HWADDR for network NAME)\n"
            "    --block:NAME=PATH (attach block device/file at PATH as block storage NAME)\n"
            "  [ --block-sector-size:NAME=SECTORSIZE ] (set sector size for block device NAME; must be "
            "a power of two greater than or equal 512)\n",
            prog);
}

static bool core_option(const char *word)
{
    if (strcmp(word, "--x-exec-heap") != 0)
        return false;
    if (!spt_exec_heap)
        warn_msg("WARNING: The heap and stack will be executable (--x-exec-heap).");
    spt_exec_heap = true;
    return true;
}

const struct cli spt_cli = {.abi_version = SPT_ABI_VERSION, .usage = usage, .core_option = core_option};

uint64_t spt_mem_size(int64_t mib)
{
    if (mib < 0) {
        warn_msg("Assertion failed: guest memory size must be positive (--mem=%lld)", (long long)mib);
        abort();
    }
    /* Beyond the address space: the mapping fails with its own message. */
    if ((uint64_t)mib > (UINT64_MAX >> 20))
        return UINT64_MAX & ~((1ULL << 20) - 1);
    return (uint64_t)mib << 20;
}
