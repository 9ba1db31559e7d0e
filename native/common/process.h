/* process.h: process-wide settings both tenders make: ending with the parent,
 * standard descriptors, and refusing a personality that would make guest
 * memory executable. */
#ifndef PETREL_PROCESS_H
#define PETREL_PROCESS_H

/* First thing in main: die with the parent (petrel-differences.md (e)). */
void die_with_parent(void);

/* Descriptors 0, 1 and 2 open (on /dev/null where the parent left one
 * closed), before anything else is opened: otherwise a block file or tap could
 * become descriptor 1 and receive the guest's console output. */
void standard_fds_open(void);

/* Step 11 of §1.8: with READ_IMPLIES_EXEC every readable mapping of the
 * tender, guest memory included, would be executable on the host. solo5
 * refuses to run then, with this text. */
void refuse_read_implies_exec(void);

#endif
