/* args.c: option parsing, usage and version. Texts are solo5-hvt's with the
 * program name substituted, so operators and the daemon read one language. */
#include "args.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devices.h"
#include "util.h"

#ifndef PETREL_VERSION
#define PETREL_VERSION "unknown"
#endif

#define HVT_ABI_VERSION_TEXT "2"
#define MIB (1ULL << 20)
#define MEM_ALIGN (2 * MIB)
#define MEM_MAX (1ULL << 32)

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

int args_pass1(int argc, char *argv[])
{
    int i = 1;
    while (i < argc && argv[i][0] == '-') {
        if (strcmp(argv[i], "--help") == 0) {
            usage();
            exit(1);
        }
        if (strcmp(argv[i], "--version") == 0) {
            /* The daemon selects a tender by the exact line "ABI version 2". */
            fprintf(stderr, "%s tender, version %s\nABI version " HVT_ABI_VERSION_TEXT "\n", prog,
                    PETREL_VERSION);
            exit(0);
        }
        if (strcmp(argv[i++], "--") == 0)
            break;
    }
    if (i >= argc) {
        warn_msg("Missing KERNEL operand");
        usage();
        exit(1);
    }
    return i;
}

static _Noreturn void invalid_option(const char *word)
{
    warn_msg("Invalid option: `%s'", word);
    usage();
    exit(1);
}

uint64_t args_pass2(int argc, char *argv[], int kernel, const struct manifest *m)
{
    uint64_t mem = 512 * MIB;
    (void)argc;
    for (int i = 1; i < kernel; i++) {
        const char *w = argv[i];
        if (strcmp(w, "--") == 0)
            continue;
        if (strncmp(w, "--mem=", 6) == 0) {
            int64_t n;
            if (!parse_i64(w + 6, &n) || n == 0)
                die("Malformed argument to --mem");
            /* Unsigned on purpose: a negative size becomes huge and is refused
             * by the maximum below, as in solo5. */
            mem = (uint64_t)n * MIB;
            continue;
        }
        /* solo5 offers the word after a --mem= to the modules in the same step
         * and so reports some errors twice; we report each once (the texts are
         * the same, and nobody should count stderr lines). */
        if (block_option(w, m) || net_option(w, m))
            continue;
        invalid_option(w);
    }
    return mem;
}

uint64_t args_mem_size(uint64_t requested)
{
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
