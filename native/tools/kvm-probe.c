/*
 * kvm-probe: opens a KVM device read-write, as a tender does, and asks it for
 * KVM_GET_API_VERSION. petreld's capability probe runs it because Node cannot
 * issue an ioctl; a device node can exist and still be unopenable (nodev
 * mounts, permissions, no driver bound), so only opening it tells.
 *
 * Usage: kvm-probe [DEVICE]        (DEVICE defaults to /dev/kvm)
 *
 * Exactly one line, fields separated by single spaces, on stdout when the
 * device answered and on stderr otherwise:
 *
 *   api <version>            exit 0  stdout: opened; the ioctl returned <version>
 *   open <errno> <text>      exit 2  stderr: open(DEVICE, O_RDWR) failed
 *   ioctl <errno> <text>     exit 3  stderr: KVM_GET_API_VERSION failed
 *   usage: kvm-probe ...     exit 64 stderr: wrong arguments
 *
 * <errno> is the decimal errno value and <text> its strerror() text, which
 * petreld quotes in its preflight messages. The version is printed as the
 * kernel returned it; judging it (solo5 needs 12) is the caller's business.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

enum {
	EXIT_API = 0,
	EXIT_OPEN = 2,
	EXIT_IOCTL = 3,
	EXIT_USAGE = 64,
};

static int report_errno(const char *step, int error, int status)
{
	fprintf(stderr, "%s %d %s\n", step, error, strerror(error));
	return status;
}

int main(int argc, char **argv)
{
	const char *device = "/dev/kvm";

	if (argc > 2 || (argc == 2 && argv[1][0] == '\0')) {
		fprintf(stderr, "usage: kvm-probe [DEVICE]\n");
		return EXIT_USAGE;
	}
	if (argc == 2)
		device = argv[1];

	int fd = open(device, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return report_errno("open", errno, EXIT_OPEN);

	int version = ioctl(fd, KVM_GET_API_VERSION, 0);
	int saved = errno;
	close(fd);
	if (version < 0)
		return report_errno("ioctl", saved, EXIT_IOCTL);

	printf("api %d\n", version);
	return EXIT_API;
}
