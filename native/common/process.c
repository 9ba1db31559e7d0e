/* process.c: the parent-death signal and the personality check. */
#include "process.h"

#include <signal.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "util.h"

void die_with_parent(void)
{
    /* SIGKILL, not SIGTERM: a tender whose daemon is gone has nobody to report
     * to, and SIGKILL also ends it in states no handler could (§1.12). The
     * signal follows the parent *thread*; the daemon spawns from its main
     * thread. If the parent died before prctl took effect we were already
     * reparented: notice it and leave. */
    pid_t parent = getppid();
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
        die_errno("Could not set the parent-death signal");
    if (getppid() != parent)
        _exit(1);
}

void refuse_read_implies_exec(void)
{
    int persona = personality(0xffffffff);
    if (persona != -1 && (persona & READ_IMPLIES_EXEC))
        die("Cowardly refusing to run with a sys_personality of READ_IMPLIES_EXEC. Please report a bug, "
            "with details of your Linux distribution and GCC version");
}
