#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the fleet tests and benchmarks: its own temporary directory,
# a loopback TCP port, trust authentication, no fsync. Nothing outside that directory is touched.
#
#   scripts/test-postgres.sh start [DIR]   create and start a cluster in DIR (default: a new
#                                           temporary directory); prints its URL on stdout
#   scripts/test-postgres.sh stop DIR      stop the cluster in DIR (by its postmaster PID) and
#                                           remove DIR
#
# Binaries: $PG_BIN, else the newest /usr/lib/postgresql/*/bin (Debian's `postgresql` package).
# As root the server runs as the `postgres` user (PostgreSQL refuses to run as root), so DIR is
# given to that user.
set -euo pipefail

die() {
  echo "test-postgres: $*" >&2
  exit 1
}

find_bin() {
  if [ -n "${PG_BIN:-}" ]; then
    [ -x "$PG_BIN/initdb" ] || die "PG_BIN=$PG_BIN has no initdb"
    echo "$PG_BIN"
    return
  fi
  local initdb
  initdb=$(ls -d /usr/lib/postgresql/*/bin/initdb 2>/dev/null | sort -V | tail -n 1 || true)
  [ -n "$initdb" ] || die "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb; apt-get install postgresql)"
  dirname "$initdb"
}

# Runs a command as the cluster's owner: `postgres` when we are root, ourselves otherwise.
as_owner() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

free_port() {
  node -e "const s=require('node:net').createServer();s.listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"
}

start() {
  local bin dir port attempt
  bin=$(find_bin)
  if [ -n "${1:-}" ]; then
    dir=$1
    mkdir -p "$dir"
  else
    dir=$(mktemp -d "${TMPDIR:-/tmp}/petrel-pg.XXXXXX")
  fi
  [ -z "$(ls -A "$dir")" ] || die "$dir is not empty"
  if [ "$(id -u)" -eq 0 ]; then
    chown postgres: "$dir"
  fi
  chmod 700 "$dir"
  as_owner "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --no-locale --no-sync \
    >"$dir/initdb.log" 2>&1 || {
    cat "$dir/initdb.log" >&2
    die "initdb failed in $dir"
  }
  # The port is chosen free and then bound by the server; another process may take it in
  # between, so a failed start is retried on a new port.
  for attempt in 1 2 3 4 5; do
    port=$(free_port)
    if as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
      -o "-k $dir -p $port -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
      start >/dev/null 2>&1; then
      echo "postgresql://postgres@127.0.0.1:$port/postgres" | tee "$dir/url"
      echo "test-postgres: cluster in $dir; stop with: $0 stop $dir" >&2
      return
    fi
    echo "test-postgres: start on port $port failed (attempt $attempt)" >&2
  done
  tail -n 20 "$dir/server.log" >&2 || true
  die "could not start PostgreSQL in $dir"
}

stop() {
  local dir=${1:-} pid
  [ -n "$dir" ] || die "usage: $0 stop DIR"
  [ -d "$dir" ] || die "$dir does not exist"
  if [ -f "$dir/data/postmaster.pid" ]; then
    pid=$(head -n 1 "$dir/data/postmaster.pid")
    # Fast shutdown by PID: SIGINT to this cluster's postmaster only, then wait for it to go.
    kill -INT "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      kill -QUIT "$pid" 2>/dev/null || true
      sleep 0.5
    fi
  fi
  rm -rf "$dir"
}

case "${1:-}" in
start) start "${2:-}" ;;
stop) stop "${2:-}" ;;
*) die "usage: $0 start [DIR] | stop DIR" ;;
esac
