/* device_calls.h: petrel-hvt's hypercall handlers for block and net devices. */
#ifndef PETREL_HVT_DEVICE_CALLS_H
#define PETREL_HVT_DEVICE_CALLS_H

#include <stdint.h>

#include "guest.h"

void hc_block_write(const struct guest *g, uint64_t gpa);
void hc_block_read(const struct guest *g, uint64_t gpa);
void hc_net_write(const struct guest *g, uint64_t gpa);
void hc_net_read(const struct guest *g, uint64_t gpa);

/* Registers the handlers of each module that has a device: a BLOCK_* or NET_*
 * call without one is fatal, as in solo5 (§3.10). */
void device_calls_register(void);

#endif
