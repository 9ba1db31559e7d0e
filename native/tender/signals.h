/* signals.h: how petrel-hvt ends when it is told to. */
#ifndef PETREL_SIGNALS_H
#define PETREL_SIGNALS_H

/* Step 4 of §1.8: SIGTERM/SIGINT print "Exiting on signal N" and exit 1. */
void signals_install(void);

#endif
