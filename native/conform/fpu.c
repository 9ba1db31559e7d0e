/* fpu.c: the guest may use SSE (solo5-spt.md §3.4, §6 row 7): spt guests are
 * host processes, unlike hvt guests on kvm-pvm hosts. This file is compiled
 * with SSE on (the build checks that it uses XMM registers); the results are
 * compared as bit patterns, so no floating-point printing is needed. */
#include "conform.h"

typedef double v2df __attribute__((vector_size(16)));

static uint64_t bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

/* Not folded at compile time: the work must happen in the guest. */
static volatile double one = 1.0, two = 2.0;

void conform_fpu(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    uint32_t mxcsr;
    __asm__ __volatile__("stmxcsr %0" : "=m"(mxcsr));
    /* Every exception masked: a guest computing 1/0 gets infinity, not a signal. */
    check("MXCSR exceptions masked", (mxcsr & 0x1f80) == 0x1f80, "an exception is unmasked");

    double sum = 0;
    for (int k = 1; k <= 1000; k++)
        sum += one / ((double)k * (double)k);
    /* Summed in this order in IEEE double, the result has exactly these bits. */
    check("scalar double", bits(sum) == 0x3ffa4d8e550a946eULL, "wrong sum of 1/k^2");
    check("sqrt", bits(__builtin_sqrt(two)) == 0x3ff6a09e667f3bcdULL, "wrong sqrt(2)");

    v2df v = {one, two}, w = {two, two};
    v2df p = v * w + v;
    check("packed double", bits(p[0]) == bits(3.0) && bits(p[1]) == bits(6.0), "wrong vector result");

    volatile double zero = 0;
    check("1/0 is infinity", bits(one / zero) == 0x7ff0000000000000ULL, "not infinity");
    halt(0);
}
