/* devices.h: the block and net modules (solo5.md §1.4, §3.13, §3.14): options,
 * attaching block files and taps, and the manifest entries the guest sees.
 * Shared by both tenders; how the guest then does I/O is each tender's own
 * (hvt: hypercalls, tender/device_calls.c; spt: the guest's own system calls).
 * A device is identified by its manifest entry index, which is also the
 * handle the guest uses. */
#ifndef PETREL_DEVICES_H
#define PETREL_DEVICES_H

#include <stdbool.h>
#include <stdint.h>

#include "manifest.h"

struct device {
    int fd;        /* -1 until attached */
    uint32_t kind; /* MFT_BLOCK_BASIC or MFT_NET_BASIC once attached */
    /* block */
    uint64_t capacity;
    uint32_t block_size;
    /* net */
    bool mac_given;
    uint8_t mac[6];
    uint16_t mtu;
};

extern struct device devices[MFT_MAX_ENTRIES];

void devices_init(void);

/* Pass 2 (§1.2): true if the word is a well-formed option of the module and
 * its device was set up; false (after printing why, where solo5 does) makes
 * the caller report "Invalid option". Block files are opened and taps attached
 * here, as in solo5. */
bool block_option(const char *word, const struct manifest *m);
bool net_option(const char *word, const struct manifest *m);

/* Module set-up after the guest's memory exists (step 9 of §1.8): block
 * size checks, MACs, the manifest entries the guest sees (properties and
 * attached; the host-private word is each tender's own). solo5-hvt runs the
 * block module first, solo5-spt the net module (solo5-spt.md §2.7); both then
 * require every declared device to be attached. */
void devices_setup_block(struct manifest *m);
void devices_setup_net(struct manifest *m);
void devices_check_attached(const struct manifest *m);

/* Whether a device of this kind (MFT_BLOCK_BASIC, MFT_NET_BASIC) is attached. */
bool devices_have(uint32_t kind);

/* The manifest index of the device NAME of this type, or -1 after printing
 * solo5's "Resource not declared in manifest" (an undeclared name, or one
 * declared with the other type). */
int device_declared(const struct manifest *m, const char *name, uint32_t type);

/* A device name as the option parser accepts it: [A-Za-z0-9]{1,67} before '='.
 * Returns a pointer just past the '=', or NULL. */
const char *device_name(const char *s, char name[MFT_NAME_SIZE]);

/* For POLL: the attached net devices' descriptors and handles. */
unsigned net_pollable(int fds[MFT_MAX_ENTRIES], unsigned handles[MFT_MAX_ENTRIES]);

#endif
