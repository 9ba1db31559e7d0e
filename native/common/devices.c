/* devices.c: what the block and net modules share: the device table, the
 * device-name syntax, and the set-up after the VM exists (step 9 of §1.8). */
#include "devices.h"

#include <string.h>
#include <sys/random.h>

#include "util.h"

struct device devices[MFT_MAX_ENTRIES];

void devices_init(void)
{
    for (unsigned i = 0; i < MFT_MAX_ENTRIES; i++)
        devices[i] = (struct device){.fd = -1};
}

const char *device_name(const char *s, char name[MFT_NAME_SIZE])
{
    size_t n = 0;
    while ((s[n] >= 'A' && s[n] <= 'Z') || (s[n] >= 'a' && s[n] <= 'z') || (s[n] >= '0' && s[n] <= '9')) {
        if (n == MFT_NAME_SIZE - 1)
            return NULL;
        n++;
    }
    if (n == 0 || s[n] != '=')
        return NULL;
    memcpy(name, s, n);
    name[n] = '\0';
    return s + n + 1;
}

int device_declared(const struct manifest *m, const char *name, uint32_t type)
{
    int i = manifest_find(m, name, type);
    if (i < 0)
        warn_msg("Resource not declared in manifest: '%s'", name);
    return i;
}

/* Block module set-up: default sector size, size checks, properties. */
void devices_setup_block(struct manifest *m)
{
    for (unsigned i = 1; i < m->entries; i++) {
        struct device *d = &devices[i];
        if (manifest_type(m, i) != MFT_BLOCK_BASIC || d->fd < 0)
            continue;
        if (d->block_size == 0)
            d->block_size = 512;
        if (d->capacity % d->block_size != 0)
            die("%s: Backing storage size must be block aligned (%u bytes)", manifest_name(m, i),
                d->block_size);
        if (d->capacity < d->block_size)
            die("%s: Backing storage must be at least 1 block (%u bytes) in size", manifest_name(m, i),
                d->block_size);
        uint16_t bs = (uint16_t)d->block_size;
        uint8_t *e = manifest_entry(m, i);
        memcpy(e + MFT_E_PROPS, &d->capacity, 8);
        memcpy(e + MFT_E_PROPS + 8, &bs, 2);
        e[MFT_E_ATTACHED] = 1;
    }
}

/* Net module set-up: MACs, properties. */
void devices_setup_net(struct manifest *m)
{
    for (unsigned i = 1; i < m->entries; i++) {
        struct device *d = &devices[i];
        if (manifest_type(m, i) != MFT_NET_BASIC || d->fd < 0)
            continue;
        static const uint8_t zero[6];
        if (!d->mac_given || memcmp(d->mac, zero, 6) == 0) {
            /* Random, unicast (bit 0 clear), locally administered (bit 1 set). */
            if (getrandom(d->mac, sizeof d->mac, 0) != (ssize_t)sizeof d->mac)
                die_errno("Could not generate a MAC address");
            d->mac[0] = (uint8_t)((d->mac[0] & 0xfe) | 0x02);
        }
        uint8_t *e = manifest_entry(m, i);
        memcpy(e + MFT_E_PROPS, d->mac, 6);
        memcpy(e + MFT_E_PROPS + 6, &d->mtu, 2);
        e[MFT_E_ATTACHED] = 1;
    }
}

void devices_check_attached(const struct manifest *m)
{
    int missing = 0;
    for (unsigned i = 1; i < m->entries; i++) {
        uint32_t type = manifest_type(m, i);
        if ((type == MFT_BLOCK_BASIC || type == MFT_NET_BASIC) && devices[i].fd < 0) {
            warn_msg("Device '%s' of type %s declared but not attached.", manifest_name(m, i),
                     type == MFT_BLOCK_BASIC ? "BLOCK_BASIC" : "NET_BASIC");
            missing = 1;
        }
    }
    if (missing)
        die("All declared devices must be attached. See --help for syntax.");
}

bool devices_have(uint32_t kind)
{
    for (unsigned i = 0; i < MFT_MAX_ENTRIES; i++)
        if (devices[i].kind == kind && devices[i].fd >= 0)
            return true;
    return false;
}
