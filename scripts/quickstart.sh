#!/usr/bin/env bash
# Petrel's main job on a fresh machine: install and build, make a local CA and server
# certificate, then run petreld in the foreground with its state under $PETREL_HOME (default
# ./.petrel): probe, preflight, boot canary, ready for clients on the local sockets, on
# mutual TLS at 127.0.0.1:${PETREL_TLS_PORT:-1025}, and with the dashboard and web API at
# https://127.0.0.1:${PETREL_WEB_PORT:-8443}/. Ctrl-C stops it; the state stays.
#
# The dashboard: a web certificate for 127.0.0.1 and localhost, a delegation `quickstart` (16
# unikernels, 2 GiB, every CPU, 1 GiB of block storage) and a sign-in token of it, made once and
# kept under $PETREL_HOME (the token file 0600). The README's next steps create under that
# delegation (quickstart:hello), so what they make is what the dashboard shows (docs/web.md,
# "The quickstart's dashboard", says why a delegation rather than a token for the whole host).
#   PETREL_WEB=0            no web listener
# Runtimes: hvt (solo5 hvt guests) needs a usable /dev/kvm; spt (solo5 spt guests, ABI 2, as
# sandboxed processes under solo5-spt or the bundled petrel-spt) needs none. Set PETREL_RUNTIMES to choose; by default this script
# picks hvt,spt when /dev/kvm opens and spt otherwise, and SAYS which it picked — petreld itself
# never falls back: a runtime it is given and cannot serve stops it, naming what is missing.
# Where /dev/kvm is a nested software KVM (kvm-pvm), hvt guests die at their first SSE
# instruction (floating point: every MirageOS unikernel); petreld's log then has a WARN line,
# check hvtSse, and such unikernels belong under spt.
#   PETREL_SKIP_INSTALL=1   skip the install, build and npm link steps (already done)
set -euo pipefail
cd "$(dirname "$0")/.."
home=${PETREL_HOME:-$PWD/.petrel}
port=${PETREL_TLS_PORT:-1025}
web_port=${PETREL_WEB_PORT:-8443}
web=${PETREL_WEB:-1}

if [ "${PETREL_SKIP_INSTALL:-0}" != 1 ]; then
  bash scripts/install-deps.sh
  npm ci --no-audit --no-fund
  npm run build
  # `petrel` (and `petreld`) on PATH: npm's global bin links into this tree (README). Not fatal:
  # a user who cannot write npm's prefix is told how to.
  if ! command -v petrel >/dev/null; then
    npm link --no-audit --no-fund >/dev/null 2>&1 ||
      echo "quickstart: npm link failed (npm's prefix not writable?): npm config set prefix ~/.local, then npm link; until then use node dist/src/cli/petrel.js" >&2
  fi
fi

petrel() { node dist/src/cli/petrel.js "$@"; }
[ -f "$home/pki/cacert.pem" ] || petrel ca init --dir "$home/pki" >/dev/null

web_flags=()
token=$home/dashboard.token
if [ "$web" != 0 ]; then
  pki=$home/pki
  [ -f "$pki/web.pem" ] || petrel ca web-cert 127.0.0.1 localhost --dir "$pki" >/dev/null
  if [ ! -f "$pki/quickstart.pem" ]; then
    cpus=$(seq -s, 0 $(($(nproc) - 1)))
    petrel ca delegate quickstart --vms 16 --mem 2048 --cpus "$cpus" --block 1024 --dir "$pki" >/dev/null
    rm -f "$token"
  fi
  # A token lives 30 days (petrel ca token's default): one near its end is made anew.
  if [ -f "$token" ] && [ -n "$(find "$token" -mtime +28)" ]; then rm -f "$token"; fi
  if [ ! -f "$token" ]; then
    # Written 0600; its id and expiry are said on stderr.
    petrel ca token --cert "$pki/quickstart.pem" --key "$pki/quickstart.key" --name dashboard --out "$token"
  fi
  web_flags=(--web-listen "127.0.0.1:$web_port" --web-cert "$pki/web.pem" --web-key "$pki/web.key")
fi

if [ -z "${PETREL_RUNTIMES:-}" ]; then
  # Ask the bundled helper, which opens the device and issues KVM_GET_API_VERSION.
  if native/build/kvm-probe /dev/kvm >/dev/null 2>&1; then
    PETREL_RUNTIMES=hvt,spt
  else
    PETREL_RUNTIMES=spt
    echo "quickstart: /dev/kvm cannot be opened here, so only spt guests (solo5 spt unikernels, ABI 2) will run;" >&2
    echo "quickstart: set PETREL_RUNTIMES=hvt to make petreld refuse to start without KVM instead." >&2
  fi
fi

cat >&2 <<TXT
quickstart: starting petreld (runtimes $PETREL_RUNTIMES), state in $home
TXT
if [ "$web" != 0 ]; then
  cat >&2 <<TXT
quickstart: the dashboard: https://127.0.0.1:$web_port/ (also https://localhost:$web_port/)
quickstart:   sign in with the token in $token (cat it, paste it); it acts as the delegation
quickstart:   "quickstart", under which the steps below create. Your browser will warn about the
quickstart:   certificate until it trusts $home/pki/cacert.pem as an authority (Chromium:
quickstart:   Settings, Privacy and security, Security, Manage certificates, Authorities, Import;
quickstart:   Firefox: Settings, Certificates, View Certificates, Authorities, Import).
TXT
fi
image=native/build/canary.spt
case ",$PETREL_RUNTIMES," in *,spt,*) ;; *) image=native/build/canary.hvt ;; esac
cat >&2 <<TXT
quickstart: once it logs "petreld ready", in another shell:
  petrel create quickstart:hello $image --arg wait --arg hi --run-dir $home/run
  petrel console quickstart:hello --run-dir $home/run
  petrel node info --run-dir $home/run
TXT
exec node dist/src/cli/petreld.js \
  --state-dir "$home/state" --run-dir "$home/run" --runtimes "$PETREL_RUNTIMES" \
  --tls-listen "127.0.0.1:$port" --tls-ca "$home/pki/cacert.pem" \
  --tls-cert "$home/pki/server.pem" --tls-key "$home/pki/server.key" "${web_flags[@]}"
