/* cli.h: what is petrel-spt's own in the command line (solo5.md §1.3, §1.5):
 * its usage, the ABI it speaks, --x-exec-heap, and how --mem becomes a size. */
#ifndef PETREL_SPT_CLI_H
#define PETREL_SPT_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include "args.h"
#include "image.h"

extern const struct cli spt_cli;
extern const struct abi spt_abi;

/* --x-exec-heap was given: heap and stack are executable too. */
extern bool spt_exec_heap;

/* --mem MiB to bytes, as solo5-spt: no rounding and no fixed maximum; a
 * negative size aborts the tender (SIGABRT), as solo5-spt's assertion does. */
uint64_t spt_mem_size(int64_t mib);

#endif
