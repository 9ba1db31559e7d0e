/* cli.h: what is petrel-hvt's own in the command line: the usage, the ABI it
 * speaks, and the memory rounding of solo5-hvt (solo5.md §1.3, §1.5). */
#ifndef PETREL_HVT_CLI_H
#define PETREL_HVT_CLI_H

#include <stdint.h>

#include "args.h"
#include "image.h"

extern const struct cli hvt_cli;
extern const struct abi hvt_abi;

/* Step 5 of §1.8: --mem MiB to bytes, rounded down to 2 MiB with a warning,
 * at least 2 MiB, at most 4 GiB. */
uint64_t hvt_mem_size(int64_t mib);

#endif
