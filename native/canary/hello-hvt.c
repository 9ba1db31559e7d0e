/* hello-hvt.c: the second line of hello on hvt: the guest's boot time from
 * the start of the VM (plat_boot_us, hvt.c), and the wall clock, so a host can
 * subtract its own spawn time. */
#include "canary.h"

void plat_hello_line(void)
{
    put_s("petrel-canary boot_us=");
    put_u(plat_boot_us());
    put_s(" walltime_ns=");
    put_u(walltime_ns());
    put_s("\n");
}
