/* entry.S: the ELF entry point. It records the registers exactly as the tender
 * left them (the regs mode compares them with solo5.md §3.5) before any
 * compiled code can change one, then jumps, not calls, to C: RSP stays
 * mem_size - 8, aligned as at a function entry, and there is nothing to
 * return to. */
    .section .text.start, "ax"
    .globl _start
    .type _start, @function
_start:
    movq %rax, entry_state + 0(%rip)
    movq %rbx, entry_state + 8(%rip)
    movq %rcx, entry_state + 16(%rip)
    movq %rdx, entry_state + 24(%rip)
    movq %rsi, entry_state + 32(%rip)
    movq %rdi, entry_state + 40(%rip)
    movq %rbp, entry_state + 48(%rip)
    movq %rsp, entry_state + 56(%rip)
    movq %r8, entry_state + 64(%rip)
    movq %r9, entry_state + 72(%rip)
    movq %r10, entry_state + 80(%rip)
    movq %r11, entry_state + 88(%rip)
    movq %r12, entry_state + 96(%rip)
    movq %r13, entry_state + 104(%rip)
    movq %r14, entry_state + 112(%rip)
    movq %r15, entry_state + 120(%rip)
    /* pushfq/popq move RSP and back; no flag is changed by mov, push or pop. */
    pushfq
    popq entry_state + 128(%rip)
    rdtsc
    movl %eax, entry_state + 136(%rip)
    movl %edx, entry_state + 140(%rip)
    /* RDI still holds the boot information address. */
    jmp canary_main
    .size _start, . - _start

    .bss
    .balign 8
    .globl entry_state
entry_state:
    .skip 18 * 8

    .section .note.GNU-stack, "", @progbits
