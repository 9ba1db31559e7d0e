/* process.c: the parent-death signal, standard descriptors and the personality check. */
#include "process.h"

#include <fcntl.h>
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

void standard_fds_open(void)
{
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) != -1)
            continue;
        /* open returns the lowest free descriptor: this one. */
        int n = open("/dev/null", O_RDWR);
        if (n != fd)
            die_errno("Could not open /dev/null as descriptor %d", fd);
    }
}

void refuse_read_implies_exec(void)
{
    int persona = personality(0xffffffff);
    if (persona != -1 && (persona & READ_IMPLIES_EXEC))
        die("Cowardly refusing to run with a sys_personality of READ_IMPLIES_EXEC. Please report a bug, "
            "with details of your Linux distribution and GCC version");
}
