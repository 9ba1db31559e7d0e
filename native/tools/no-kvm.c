/* no-kvm.so: a TEST DOUBLE for a host without KVM, on a host that has it.
 * The tests preload it into every process they start when PETREL_TEST_NO_KVM=1
 * (test/native/kvm.ts): opening /dev/kvm then fails with ENOENT, as where the
 * device does not exist, so tenders, kvm-probe and scripts behave as there.
 * Every other path goes to the real libc. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/types.h>

static int is_kvm(const char *path)
{
    return path != NULL && strcmp(path, "/dev/kvm") == 0;
}

/* The mode argument exists only with O_CREAT or O_TMPFILE. */
static mode_t mode_of(int flags, va_list ap)
{
    return (flags & (O_CREAT | O_TMPFILE)) ? va_arg(ap, mode_t) : 0;
}

/* Every open goes through the real openat: relative to the working
 * directory (AT_FDCWD), that is what open does. */
static int open_at(int dir, const char *path, int flags, mode_t mode)
{
    static int (*real)(int, const char *, int, ...);
    if (is_kvm(path)) {
        errno = ENOENT;
        return -1;
    }
    if (real == NULL)
        real = (int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, "openat");
    return real(dir, path, flags, mode);
}

int open(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_of(flags, ap);
    va_end(ap);
    return open_at(AT_FDCWD, path, flags, mode);
}

int open64(const char *path, int flags, ...) __attribute__((alias("open")));

int openat(int dir, const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_of(flags, ap);
    va_end(ap);
    return open_at(dir, path, flags, mode);
}

int openat64(int dir, const char *path, int flags, ...) __attribute__((alias("openat")));

/* What _FORTIFY_SOURCE builds call for open(path, flags) without a mode. */
int __open_2(const char *path, int flags)
{
    return open(path, flags);
}

int __open64_2(const char *path, int flags) __attribute__((alias("__open_2")));
