/* signals.h: how the tender ends when it is told to, and when its parent dies. */
#ifndef PETREL_SIGNALS_H
#define PETREL_SIGNALS_H

/* First thing in main: die with the parent (petrel-differences.md (e)). */
void signals_parent_death(void);

/* Step 4 of §1.8: SIGTERM/SIGINT print "Exiting on signal N" and exit 1. */
void signals_install(void);

#endif
