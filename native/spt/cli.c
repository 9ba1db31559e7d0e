/* cli.c: petrel-spt's usage, ABI and core option, with solo5-spt's texts
 * (solo5-spt.md §5.1, §5.2). */
#include "cli.h"

#include <stdio.h>
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

/* solo5-spt takes any word that begins with the option's 13 characters. */
static bool core_option(const char *word)
{
    if (strncmp(word, "--x-exec-heap", 13) != 0)
        return false;
    warn_msg("WARNING: The use of --x-exec-heap is dangerous and not recommended as it makes the heap and "
             "stack executable.");
    spt_exec_heap = true;
    return true;
}

const struct cli spt_cli = {.abi_version = SPT_ABI_VERSION, .usage = usage, .core_option = core_option};
