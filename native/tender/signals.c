/* signals.c: SIGTERM/SIGINT handling (the parent-death signal is common/process.c).
 *
 * The handler is installed where solo5-hvt installs it (after the option,
 * ELF and manifest checks, before the VM exists), so the statuses a
 * supervisor sees are solo5's: killed by the signal before that point, exit 1
 * after it (§1.9, §1.11). It runs on the vCPU thread: a signal during KVM_RUN
 * or POLL enters the handler at once, which is what makes the exit prompt. */
#include "signals.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

static char msg_term[128], msg_int[128];
static size_t len_term, len_int;

static void on_signal(int sig)
{
    /* Only async-signal-safe calls: the texts were composed in advance. */
    if (sig == SIGTERM)
        (void)!write(2, msg_term, len_term);
    else
        (void)!write(2, msg_int, len_int);
    _exit(1);
}

void signals_install(void)
{
    int n = snprintf(msg_term, sizeof msg_term, "%s: Exiting on signal %d\n", prog, SIGTERM);
    len_term = n > 0 ? (size_t)n : 0;
    n = snprintf(msg_int, sizeof msg_int, "%s: Exiting on signal %d\n", prog, SIGINT);
    len_int = n > 0 ? (size_t)n : 0;

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigfillset(&sa.sa_mask); /* nothing else may run inside the handler */
    if (sigaction(SIGTERM, &sa, NULL) != 0 || sigaction(SIGINT, &sa, NULL) != 0)
        die_errno("Could not install signal handler");
}
