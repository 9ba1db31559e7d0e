#!/usr/bin/env bash
# Runs a command as on a host of another kind, as far as KVM goes (docs/contributing.md):
#
#   bash scripts/kvm-host.sh kind                     which kind this host is, one word and why
#   bash scripts/kvm-host.sh no-node -- COMMAND...    as on a host whose kernel binds no KVM:
#                                                     no /dev/kvm node at all
#   bash scripts/kvm-host.sh broken-node -- COMMAND...  as on a host with a /dev/kvm node that
#                                                     does not open (ENODEV), as kvm-probe finds
#
# The command runs in a private mount namespace (as root) whose /dev is a fresh tmpfs holding
# only the nodes the tests need — null, zero, full, random, urandom, tty, net/tun, a devpts of
# its own, a shm tmpfs, the fd links — each of the host's device number, and for broken-node a
# /dev/kvm that opens to no driver: 10:232 (KVM's number) where no KVM is bound, else a misc
# minor no driver has. The host's own /dev is never changed: devtmpfs is shared between
# namespaces, so removing /dev/kvm there would remove it for the whole machine. The command
# keeps this process's pid (unshare execs it), so a caller may signal it by pid.
set -euo pipefail

usage() {
  sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# The three kinds of host the suite must pass on, decided as petreld's probe decides.
kind() {
  local probe
  probe="$(dirname "$0")/../native/build/kvm-probe"
  if [ ! -e /dev/kvm ]; then
    echo "no-node: there is no /dev/kvm node"
  elif [ ! -x "$probe" ]; then
    echo "unknown: /dev/kvm exists; build native/ (npm run build:native) to know whether it opens"
  elif "$probe" /dev/kvm >/dev/null 2>&1; then
    echo "kvm: /dev/kvm opens and answers the KVM API"
  else
    echo "broken-node: /dev/kvm exists but cannot be used ($("$probe" /dev/kvm 2>&1 | head -1))"
  fi
}

# A misc minor for a node that opens to no driver: KVM's own where no KVM is bound.
dead_misc_minor() {
  local minor
  for minor in 232 231 230 229 228 227 226 225; do
    if ! awk -v m="$minor" '$1 == m { found = 1 } END { exit !found }' /proc/misc; then
      echo "$minor"
      return
    fi
  done
  echo "kvm-host: no free misc minor for a dead /dev/kvm node" >&2
  exit 1
}

# Inside the new mount namespace: a /dev of our own, then the command.
inside() {
  local kind=$1
  shift
  mount --make-rprivate /
  # Device numbers are read before the tmpfs hides the host's nodes.
  local nodes=(null zero full random urandom tty net/tun) numbers=() node
  for node in "${nodes[@]}"; do
    [ -c "/dev/$node" ] || { echo "kvm-host: the host has no /dev/$node" >&2; exit 1; }
    numbers+=("$(stat -c '%t %T %a' "/dev/$node")")
  done
  local dead=
  [ "$kind" = broken-node ] && dead=$(dead_misc_minor)
  mount -t tmpfs -o mode=0755,nosuid petrel-dev /dev
  local i major minor mode
  for i in "${!nodes[@]}"; do
    read -r major minor mode <<<"${numbers[$i]}"
    mkdir -p "$(dirname "/dev/${nodes[$i]}")"
    mknod -m "$mode" "/dev/${nodes[$i]}" c "$((16#$major))" "$((16#$minor))"
  done
  mkdir /dev/pts /dev/shm
  mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts /dev/pts
  ln -s pts/ptmx /dev/ptmx
  mount -t tmpfs -o mode=1777,nosuid,nodev shm /dev/shm
  ln -s /proc/self/fd /dev/fd
  ln -s /proc/self/fd/0 /dev/stdin
  ln -s /proc/self/fd/1 /dev/stdout
  ln -s /proc/self/fd/2 /dev/stderr
  if [ -n "$dead" ]; then
    mknod -m 0660 /dev/kvm c 10 "$dead"
  fi
  exec "$@"
}

[ $# -ge 1 ] || usage
case "$1" in
  kind)
    kind
    ;;
  --inside)
    shift
    inside "$@"
    ;;
  no-node | broken-node)
    [ $# -ge 3 ] && [ "$2" = -- ] || usage
    [ "$(id -u)" -eq 0 ] || { echo "kvm-host: run as root (it mounts a /dev of its own)" >&2; exit 1; }
    kind=$1
    shift 2
    exec unshare --mount --propagation private -- bash "$0" --inside "$kind" "$@"
    ;;
  *)
    usage
    ;;
esac
