/* args.h: the command line of solo5's tenders (solo5.md §1.1-§1.2): two passes
 * over the words before KERNEL, the first before the image is opened, the
 * second after, because module options name devices of the image's manifest.
 * hvt and spt parse alike; each tender brings its usage, its ABI version and
 * its core options besides --mem. */
#ifndef PETREL_ARGS_H
#define PETREL_ARGS_H

#include <stdbool.h>
#include <stdint.h>

#include "manifest.h"

struct cli {
    unsigned abi_version;                  /* the "ABI version N" line of --version */
    void (*usage)(void);                   /* the full usage, on stderr */
    bool (*core_option)(const char *word); /* core options besides --mem; NULL: none */
};

/* Pass 1: --help (usage, exit 1) and --version (exit 0) win wherever they
 * stand before KERNEL; "--" ends the options. Returns the index of KERNEL. */
int args_pass1(const struct cli *cli, int argc, char *argv[]);

/* Pass 2: --mem, the tender's other core options and the module options, for
 * the words before KERNEL. Returns the last --mem value in MiB as written
 * (default 512); "Malformed argument to --mem" for 0 or no number. */
int64_t args_pass2(const struct cli *cli, int argc, char *argv[], int kernel, const struct manifest *m);

/* §1.7: the guest arguments joined with single spaces into dst, which holds
 * GUEST_CMDLINE_SIZE bytes; "Guest command line too long" beyond 8191
 * characters. */
#define GUEST_CMDLINE_SIZE 8192
void args_guest_cmdline(char *dst, int argc, char *const argv[]);

#endif
