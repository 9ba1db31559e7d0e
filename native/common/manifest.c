/* manifest.c: validating and querying the manifest content. Multi-byte fields
 * are read with memcpy because the content sits in a byte buffer. */
#include "manifest.h"

#include <string.h>

static uint32_t rd32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

uint8_t *manifest_entry(struct manifest *m, unsigned i)
{
    return m->raw + MFT_HEADER_SIZE + (size_t)i * MFT_ENTRY_SIZE;
}

static const uint8_t *entry_c(const struct manifest *m, unsigned i)
{
    return m->raw + MFT_HEADER_SIZE + (size_t)i * MFT_ENTRY_SIZE;
}

uint32_t manifest_type(const struct manifest *m, unsigned i)
{
    return rd32(entry_c(m, i) + MFT_E_TYPE);
}

const char *manifest_name(const struct manifest *m, unsigned i)
{
    return (const char *)entry_c(m, i) + MFT_E_NAME;
}

bool manifest_parse(struct manifest *m, const uint8_t *content, size_t size)
{
    if (size < MFT_HEADER_SIZE || size > MFT_MAX_SIZE)
        return false;
    uint32_t version = rd32(content), entries = rd32(content + 4);
    if (version != MFT_VERSION || entries < 1 || entries > MFT_MAX_ENTRIES)
        return false;
    if (size != MFT_HEADER_SIZE + (size_t)entries * MFT_ENTRY_SIZE)
        return false;
    memcpy(m->raw, content, size);
    m->size = size;
    m->entries = entries;
    /* Entry 0 is the generator's reserved entry; the tender relies on names being
     * terminated and on "attached" being its own to set. Property bytes and the
     * types of later entries are deliberately not checked (solo5 does not). */
    if (manifest_type(m, 0) != MFT_RESERVED_FIRST || manifest_name(m, 0)[0] != '\0')
        return false;
    for (unsigned i = 0; i < entries; i++) {
        const uint8_t *e = entry_c(m, i);
        if (e[MFT_E_NAME + MFT_NAME_SIZE - 1] != 0 || e[MFT_E_ATTACHED] != 0)
            return false;
    }
    return true;
}

int manifest_find(const struct manifest *m, const char *name, uint32_t type)
{
    for (unsigned i = 0; i < m->entries; i++)
        if (manifest_type(m, i) == type && strcmp(manifest_name(m, i), name) == 0)
            return (int)i;
    return -1;
}
