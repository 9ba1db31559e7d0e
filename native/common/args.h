/* args.h: solo5-hvt's command line (solo5.md §1.1-§1.3): two passes over the
 * words before KERNEL, the first before the image is opened, the second after,
 * because module options name devices of the image's manifest. */
#ifndef PETREL_ARGS_H
#define PETREL_ARGS_H

#include <stdint.h>

#include "manifest.h"

/* Pass 1: --help (usage, exit 1) and --version (exit 0) win wherever they
 * stand before KERNEL; "--" ends the options. Returns the index of KERNEL. */
int args_pass1(int argc, char *argv[]);

/* Pass 2: --mem and the module options, for the words before KERNEL. Returns
 * the requested guest memory in bytes (before rounding; default 512 MiB). */
uint64_t args_pass2(int argc, char *argv[], int kernel, const struct manifest *m);

/* Step 5 of §1.8: round down to 2 MiB with a warning, at least 2 MiB, at most 4 GiB. */
uint64_t args_mem_size(uint64_t requested);

#endif
