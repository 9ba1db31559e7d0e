#!/usr/bin/env bash
# Installs what Petrel needs from Debian's packages on a fresh machine (as root), only what is
# missing: a C and C++ toolchain (g++ for native/sslctx, built on node's C++ headers) and Linux
# headers for native/, iproute2 and taskset for the host side, binutils (the canary build checks
# it has no SSE), openssl (TLS preflight tests), time (boot benchmark), systemd for
# systemd-analyze and lintian (the package test verifies the units and lints the package;
# systemd need not run, and dpkg-deb, strip and objcopy are already here), chromium for the
# dashboard's browser tests. PostgreSQL, for the fleet tests only, is installed by .ci/run.
set -euo pipefail
need=()
command -v gcc >/dev/null || need+=(gcc)
command -v g++ >/dev/null || need+=(g++)
command -v make >/dev/null || need+=(make)
command -v ip >/dev/null || need+=(iproute2)
[ -f /usr/include/linux/kvm.h ] || need+=(linux-libc-dev)
[ -f /usr/include/stdio.h ] || need+=(libc6-dev)
command -v taskset >/dev/null || need+=(util-linux)
command -v objdump >/dev/null || need+=(binutils)
command -v openssl >/dev/null || need+=(openssl)
[ -x /usr/bin/time ] || need+=(time)
# The package test (test/package): systemd-analyze verifies the units (systemd need not run).
command -v systemd-analyze >/dev/null || need+=(systemd)
# … and lintian checks the package (Debian's own, with its perl modules).
command -v lintian >/dev/null || need+=(lintian)
# The dashboard's browser tests (test/web/dashboard.test.ts, bench/web.ts): Debian's Chromium,
# driven by playwright-core (an npm devDependency) at /usr/bin/chromium.
[ -x /usr/bin/chromium ] || need+=(chromium)
if [ "${#need[@]}" -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "install as root: apt-get install ${need[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
