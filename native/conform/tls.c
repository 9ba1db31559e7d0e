/* tls.c: thread-local storage through the FS base (solo5-spt.md §3.4, §4.2):
 * the guest makes its own thread blocks and sets FS with
 * arch_prctl(ARCH_SET_FS), the one arch_prctl the filter allows. x86_64 TLS
 * (variant II): a thread's variables lie just below its thread pointer, and the
 * word at the thread pointer points to itself.
 *   tls         two thread blocks, switched back and forth: each keeps its own
 *               values
 *   tls before  a thread variable used while FS is still 0: SIGSEGV (139) */
#include "conform.h"
#include "spt.h"

static __thread uint64_t counter;
static __thread uint8_t name[24];

/* The compiler takes the thread pointer as fixed within a function and may
 * keep a variable's address across the switch: every access is its own call,
 * which the compiler may neither inline nor assume pure (noipa). */
__attribute__((noipa)) static uint64_t *counter_at(void)
{
    return &counter;
}

__attribute__((noipa)) static uint8_t *name_at(void)
{
    return name;
}

/* From ../canary/spt.ld: the size and alignment of the thread variables. */
extern char tls_size[], tls_align[];

#define BLOCK 4096
static uint8_t block_a[BLOCK] __attribute__((aligned(64)));
static uint8_t block_b[BLOCK] __attribute__((aligned(64)));

/* The thread pointer of a block: the variables end there, the self pointer follows. */
static uint64_t thread_pointer(uint8_t *block)
{
    const uint64_t size = (uint64_t)(uintptr_t)tls_size, align = (uint64_t)(uintptr_t)tls_align;
    const uint64_t tp = (uint64_t)(uintptr_t)block + ((size + align - 1) / align) * align;
    memcpy((void *)(uintptr_t)tp, &tp, sizeof tp);
    return tp;
}

static void set_fs(uint64_t base)
{
    long r = sys3(SYS_arch_prctl, 0x1002 /* ARCH_SET_FS */, (long)base, 0);
    check("arch_prctl(ARCH_SET_FS)", r == 0, "refused");
}

void conform_tls(int argc, char **argv)
{
    if (str_eq(arg(argc, argv, 1, ""), "before")) {
        note("tls: a thread variable with FS base 0");
        *counter_at() = 1;
        note("tls: FAILED survived");
        halt(1);
    }
    check("thread variables fit a block", (uint64_t)(uintptr_t)tls_size + 8 <= BLOCK, "too large");
    const uint64_t a = thread_pointer(block_a), b = thread_pointer(block_b);

    set_fs(a);
    *counter_at() = 0x1111;
    memcpy(name_at(), "thread a", 9);
    const uint64_t where = (uint64_t)(uintptr_t)counter_at();
    check("variables in block a", where >= (uint64_t)(uintptr_t)block_a && where < a, "outside the block");

    set_fs(b);
    check("block b starts zero", *counter_at() == 0 && name_at()[0] == 0, "not zero");
    *counter_at() = 0x2222;
    memcpy(name_at(), "thread b", 9);

    set_fs(a);
    check("block a kept its values", *counter_at() == 0x1111 && str_eq((const char *)name_at(), "thread a"), "lost");
    set_fs(b);
    check("block b kept its values", *counter_at() == 0x2222 && str_eq((const char *)name_at(), "thread b"), "lost");
    halt(0);
}
