/*
 * allocator.node: petreld's say over glibc's allocator, as a Node-API addon
 * (src/host/allocator.ts loads it).
 *
 * Node takes the memory behind every Buffer from malloc. glibc serves a
 * request above its mmap threshold (128 KiB) with a mapping of its own that
 * goes back to the kernel when freed, but the first such free raises the
 * threshold to the size freed (up to 32 MiB): after one 8 MB image frame,
 * every later frame and every socket chunk comes from the heap, and the heap
 * keeps what it once held. Measured on 40 creates of 8 MB images: the heap grew
 * from 3 to 50 MiB and stayed there. Loading this module fixes the threshold
 * (which turns the adjustment off), and trim() hands the free pages inside the
 * heap back to the kernel, which petreld asks for after a garbage collection
 * has freed the buffers of a transfer.
 */
#include <malloc.h>
#include <node_api.h>

/* Above this, a block is a mapping of its own: glibc's default, kept fixed. */
#define MMAP_THRESHOLD (128 * 1024)

/* trim(): true when memory went back to the kernel. */
static napi_value trim(napi_env env, napi_callback_info info)
{
    (void)info;
    napi_value released;
    if (napi_get_boolean(env, malloc_trim(0) == 1, &released) != napi_ok)
        return NULL;
    return released;
}

NAPI_MODULE_INIT()
{
    napi_value fn;
    if (mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) != 1) {
        napi_throw_error(env, NULL, "mallopt(M_MMAP_THRESHOLD) refused");
        return NULL;
    }
    if (napi_create_function(env, "trim", NAPI_AUTO_LENGTH, trim, NULL, &fn) != napi_ok ||
        napi_set_named_property(env, exports, "trim", fn) != napi_ok)
        return NULL;
    return exports;
}
