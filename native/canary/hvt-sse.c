/* hvt-sse.c: sse.hvt, the smallest hvt guest that uses SSE, for petreld's
 * probe (src/tender/probe.ts). On hosts whose /dev/kvm is the nested software
 * backend kvm-pvm, any SSE instruction kills an hvt guest (solo5.md §5.5:
 * "KVM: internal error exit: suberror=0x1", exit 1), and every unikernel that
 * uses floating point (all of MirageOS) dies with it; only running one tells.
 * It adds 1.5 to itself in an XMM register and halts with 0 if the sum is 3,
 * 2 if not. It shares the canary's notes and layout but none of its code:
 * the canary itself must never touch a vector register. */
#include "hvt.h"

#define FLOAT_1_5 0x3fc00000u
#define FLOAT_3 0x40400000u

__attribute__((section(".text.start"), used)) _Noreturn void _start(const void *boot_info)
{
    (void)boot_info;
    uint32_t x = FLOAT_1_5;
    /* The compiler is told nothing of XMM0 (the image is built with general
     * registers only): no code of its own uses it. */
    __asm__ __volatile__("movd %0, %%xmm0\n\t"
                         "addss %%xmm0, %%xmm0\n\t"
                         "movd %%xmm0, %0"
                         : "+r"(x));
    volatile struct hvt_halt h = {.cookie = 0, .exit_status = x == FLOAT_3 ? 0 : 2};
    hvt_call(HVT_HALT, &h);
    for (;;)
        __asm__ __volatile__("hlt");
}
