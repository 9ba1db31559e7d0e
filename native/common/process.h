/* process.h: process-wide settings both tenders make: ending with the parent,
 * and refusing a personality that would make guest memory executable. */
#ifndef PETREL_PROCESS_H
#define PETREL_PROCESS_H

/* First thing in main: die with the parent (petrel-differences.md (e)). */
void die_with_parent(void);

/* Step 11 of §1.8: with READ_IMPLIES_EXEC every readable mapping of the
 * tender, guest memory included, would be executable on the host. solo5
 * refuses to run then, with this text. */
void refuse_read_implies_exec(void);

#endif
