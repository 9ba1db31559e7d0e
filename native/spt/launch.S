/* launch.S: spt_launch(entry, stack, boot_info) leaves the tender for good and
 * enters the guest (solo5-spt.md §2.6): RDI = boot_info, RSI = entry, RDX =
 * boot_info (solo5-spt's trampoline arguments), RSP = stack, whose word is
 * the 0 of fresh memory. Beyond what solo5-spt fixes, the rest is Petrel's:
 * every other general register 0, RFLAGS 0x202, and FS base 0 rather than the
 * tender's own thread block, so nothing of the tender leaks into guest
 * registers (guests set their own FS base first, §3.6). The seccomp filter is
 * already installed; the one system call here, arch_prctl(ARCH_SET_FS, 0), is
 * on its allow-list. No C runs after it: the tender's thread pointer is gone. */
    .text
    .globl spt_launch
    .hidden spt_launch
    .type spt_launch, @function
spt_launch:
    movq %rdi, entry(%rip)
    movq %rsi, %rsp
    movq %rdx, %r12
    movl $158, %eax            /* arch_prctl */
    movl $0x1002, %edi         /* ARCH_SET_FS */
    xorl %esi, %esi
    syscall
    movq %r12, %rdi
    movq entry(%rip), %rsi
    movq %r12, %rdx
    xorl %eax, %eax
    xorl %ebx, %ebx
    xorl %ecx, %ecx
    xorl %ebp, %ebp
    xorl %r8d, %r8d
    xorl %r9d, %r9d
    xorl %r10d, %r10d
    xorl %r11d, %r11d
    xorl %r12d, %r12d
    xorl %r13d, %r13d
    xorl %r14d, %r14d
    xorl %r15d, %r15d
    /* Below RSP, on the guest's own stack: the word there is free. */
    pushq $0x202
    popfq
    jmp *%rsi
    .size spt_launch, . - spt_launch

    .bss
    .balign 8
entry:
    .skip 8

    .section .note.GNU-stack, "", @progbits
