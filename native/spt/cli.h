/* cli.h: what is petrel-spt's own in the command line (solo5-spt.md §5.1,
 * §5.2): its usage, the ABI it speaks and --x-exec-heap. */
#ifndef PETREL_SPT_CLI_H
#define PETREL_SPT_CLI_H

#include <stdbool.h>

#include "args.h"
#include "image.h"

extern const struct cli spt_cli;
extern const struct abi spt_abi;

/* --x-exec-heap was given: heap and stack are executable too. */
extern bool spt_exec_heap;

#endif
