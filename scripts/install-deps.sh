#!/usr/bin/env bash
# Installs from Debian's packages, as root and only what is missing, what petreld needs to build
# and run on a fresh machine; `--tests` adds what only the test suite and benchmarks need.
#
#   bash scripts/install-deps.sh            petreld: a C and C++ toolchain (g++ for native/sslctx,
#                                           built on node's C++ headers) and Linux headers for
#                                           native/, binutils (the canary build checks it has no
#                                           SSE), iproute2 (taps, bridges) and util-linux (taskset)
#   bash scripts/install-deps.sh --tests    and: openssl (the TLS preflight and vector tests),
#                                           time (the boot benchmark), systemd for systemd-analyze
#                                           and lintian (the package test verifies the units and
#                                           lints the package; systemd need not run), chromium
#                                           (the dashboard's browser tests)
# PostgreSQL, for the fleet tests only, is installed by .ci/run. PETREL_DEPS_ROOT (tests only)
# is a directory the file checks look under instead of /, to play a machine that lacks them.
set -euo pipefail
tests=0
case "${1:-}" in
  '') ;;
  --tests) tests=1 ;;
  -h | --help)
    sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
  *)
    echo "install-deps: unknown option $1 (--tests adds what the tests need; --help)" >&2
    exit 2
    ;;
esac
root=${PETREL_DEPS_ROOT:-}
need=()
want_command() { command -v "$1" >/dev/null || need+=("$2"); }
want_file() { [ -e "$root$1" ] || need+=("$2"); }

want_command gcc gcc
want_command g++ g++
want_command make make
want_file /usr/include/linux/kvm.h linux-libc-dev
want_file /usr/include/stdio.h libc6-dev
want_command objdump binutils
want_command ip iproute2
want_command taskset util-linux
if [ "$tests" = 1 ]; then
  want_command openssl openssl
  want_file /usr/bin/time time
  # The package test (test/package): systemd-analyze verifies the units (systemd need not run)…
  want_command systemd-analyze systemd
  # … and lintian checks the package (Debian's own, with its perl modules).
  want_command lintian lintian
  # The dashboard's browser tests (test/web/dashboard.test.ts, bench/web.ts): Debian's Chromium,
  # driven by playwright-core (an npm devDependency) at /usr/bin/chromium.
  want_file /usr/bin/chromium chromium
fi
if [ "${#need[@]}" -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "install as root: apt-get install ${need[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
