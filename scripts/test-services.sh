#!/usr/bin/env bash
# Makes the servers the integration tests use available on loopback: PostgreSQL (5432, database
# `test`, trust auth) with pgvector, Redis (6379), NATS with JetStream (4222) and etcd (2379), and
# Debian's Chromium for the browser tests. Idempotent: a server
# that already answers is left alone, so developers and .ci/run can call it any number of times.
# Prints one line per server (ok / started / FAILED: reason) and exits non-zero if any server
# cannot be made available. Logs and data of servers it starts go under ${TMPDIR:-/tmp}/lattice-*.
set -u

STATE_ROOT="${TMPDIR:-/tmp}"
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# Debian's PostgreSQL has no pgvector package: the upstream release source sits beside the clone
# (PGVECTOR_SOURCE names it elsewhere, e.g. from a git worktree that is not the clone's sibling).
PGVECTOR_VERSION=0.8.6
PGVECTOR_SOURCE="${PGVECTOR_SOURCE:-$REPO_ROOT/../shared/vendor/pgvector-$PGVECTOR_VERSION.tar.gz}"
failures=0
apt_updated=0

report() { printf '%-10s %s\n' "$1" "$2"; }
fail() {
  report "$1" "FAILED: $2"
  failures=$((failures + 1))
}
have() { command -v "$1" > /dev/null 2>&1; }

# True when something accepts TCP connections on 127.0.0.1:$1 (bounded to one second).
port_open() { timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" > /dev/null 2>&1; }

# Polls the command "$@" every 0.2 s for at most $WAIT_SECONDS (default 20) seconds.
wait_for() {
  local deadline=$((SECONDS + ${WAIT_SECONDS:-20}))
  until "$@" > /dev/null 2>&1; do
    if ((SECONDS >= deadline)); then return 1; fi
    sleep 0.2
  done
}

as_root() {
  if [ "$(id -u)" -eq 0 ]; then
    "$@"
  elif have sudo; then
    sudo -n "$@"
  else
    return 1
  fi
}

# Installs Debian packages, running apt-get update at most once per invocation. Output goes to $1.
apt_install() {
  local log="$1"
  shift
  export DEBIAN_FRONTEND=noninteractive
  if [ "$apt_updated" -eq 0 ]; then
    as_root apt-get update -q >> "$log" 2>&1 || return 1
    apt_updated=1
  fi
  as_root apt-get install -y -q --no-install-recommends "$@" >> "$log" 2>&1
}

postgres_ready() {
  pg_isready -q -h 127.0.0.1 -p 5432 -d test -t 1 &&
    { ! have psql || psql -h 127.0.0.1 -p 5432 -U postgres -d test -w -tAc 'select 1'; }
}

check_postgres() {
  if ! have pg_isready; then
    fail postgres "pg_isready not found (install the postgresql package)"
    return
  fi
  if postgres_ready > /dev/null 2>&1; then
    report postgres "ok (127.0.0.1:5432, database test)"
    return
  fi
  if ! pg_isready -q -h 127.0.0.1 -p 5432 -t 1; then
    local version
    version="$(ls /etc/postgresql 2> /dev/null | sort -V | tail -n 1)"
    if [ -z "$version" ]; then
      fail postgres "not answering on 127.0.0.1:5432 and no cluster under /etc/postgresql"
      return
    fi
    if ! as_root pg_ctlcluster --skip-systemctl-redirect "$version" main start > /dev/null 2>&1 &&
      ! pg_isready -q -h 127.0.0.1 -p 5432 -t 1; then
      fail postgres "pg_ctlcluster $version main start failed"
      return
    fi
    if ! WAIT_SECONDS=20 wait_for pg_isready -q -h 127.0.0.1 -p 5432 -t 1; then
      fail postgres "started cluster $version/main but 127.0.0.1:5432 does not answer"
      return
    fi
    if postgres_ready > /dev/null 2>&1; then
      report postgres "started (cluster $version/main, 127.0.0.1:5432)"
      return
    fi
  fi
  local why
  why="$(psql -h 127.0.0.1 -p 5432 -U postgres -d test -w -tAc 'select 1' 2>&1 | head -n 1)"
  fail postgres "server answers but database test is not usable with trust auth as postgres: ${why:-unknown}"
}

# The server's pgvector version when `CREATE EXTENSION vector` works in database test (the adapter
# creates it in its own databases as the same superuser), else nothing.
pgvector_installed() {
  psql -h 127.0.0.1 -p 5432 -U postgres -d test -w -qtA \
    -c 'CREATE EXTENSION IF NOT EXISTS vector' \
    -c "SELECT extversion FROM pg_extension WHERE extname = 'vector'" 2> /dev/null
}

# pgvector 0.8 or later (iterative index scans); older ones are updated by building the vendored release.
pgvector_recent() {
  local version="$1"
  [ -n "$version" ] && [ "$(printf '%s\n0.8.0\n' "$version" | sort -V | head -n 1)" = 0.8.0 ]
}

check_pgvector() {
  if ! postgres_ready > /dev/null 2>&1; then
    fail pgvector "PostgreSQL is not available"
    return
  fi
  local version
  version="$(pgvector_installed)"
  if pgvector_recent "$version"; then
    report pgvector "ok (vector $version)"
    return
  fi
  if [ ! -f "$PGVECTOR_SOURCE" ]; then
    fail pgvector "CREATE EXTENSION vector fails and $PGVECTOR_SOURCE is missing"
    return
  fi
  local major
  major="$(psql -h 127.0.0.1 -p 5432 -U postgres -d test -w -tAc 'SHOW server_version_num' 2> /dev/null)"
  major="${major:0:2}"
  local pg_config="/usr/lib/postgresql/$major/bin/pg_config"
  local log="$STATE_ROOT/lattice-pgvector-build.log"
  : > "$log"
  # The server headers are what postgresql-server-dev brings (pgxs.mk alone may come with the server).
  if [ ! -x "$pg_config" ] || [ ! -f "$("$pg_config" --includedir-server 2> /dev/null)/postgres.h" ]; then
    if ! apt_install "$log" "postgresql-server-dev-$major" make gcc || [ ! -x "$pg_config" ]; then
      fail pgvector "CREATE EXTENSION vector fails and apt-get install postgresql-server-dev-$major failed (see $log)"
      return
    fi
  fi
  local build
  build="$(mktemp -d "$STATE_ROOT/lattice-pgvector-XXXXXX")" || {
    fail pgvector "cannot create a build directory under $STATE_ROOT"
    return
  }
  # OPTFLAGS="" keeps the build portable across CPUs; with_llvm=no skips the JIT bitcode (clang).
  if tar -xzf "$PGVECTOR_SOURCE" -C "$build" >> "$log" 2>&1 &&
    make -C "$build/pgvector-$PGVECTOR_VERSION" PG_CONFIG="$pg_config" OPTFLAGS="" with_llvm=no >> "$log" 2>&1 &&
    as_root make -C "$build/pgvector-$PGVECTOR_VERSION" PG_CONFIG="$pg_config" OPTFLAGS="" with_llvm=no install >> "$log" 2>&1; then
    rm -rf "$build"
  else
    rm -rf "$build"
    fail pgvector "building pgvector $PGVECTOR_VERSION for PostgreSQL $major failed (see $log)"
    return
  fi
  # An older extension already created in database test is brought to the new release.
  psql -h 127.0.0.1 -p 5432 -U postgres -d test -w -qtAc 'ALTER EXTENSION vector UPDATE' > /dev/null 2>&1
  version="$(pgvector_installed)"
  if pgvector_recent "$version"; then
    report pgvector "built and installed pgvector $PGVECTOR_VERSION for PostgreSQL $major (vector $version)"
  else
    fail pgvector "installed pgvector $PGVECTOR_VERSION but CREATE EXTENSION vector still fails (see $log)"
  fi
}

check_redis() {
  if have redis-cli && [ "$(redis-cli -h 127.0.0.1 -p 6379 ping 2> /dev/null)" = PONG ]; then
    report redis "ok (127.0.0.1:6379)"
    return
  fi
  if port_open 6379; then
    fail redis "something listens on 127.0.0.1:6379 but does not answer PING"
    return
  fi
  if ! have redis-server; then
    fail redis "redis-server not found (apt-get install -y redis-server)"
    return
  fi
  if ! redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    > /dev/null 2>&1; then
    fail redis "redis-server failed to start"
    return
  fi
  if wait_for redis_pong; then
    report redis "started (127.0.0.1:6379)"
  else
    fail redis "started redis-server but 127.0.0.1:6379 does not answer PING"
  fi
}
redis_pong() { [ "$(redis-cli -h 127.0.0.1 -p 6379 ping 2> /dev/null)" = PONG ]; }

check_nats() {
  if port_open 4222; then
    report nats "ok (127.0.0.1:4222)"
    return
  fi
  if ! have nats-server; then
    fail nats "nats-server not found (apt-get install -y nats-server)"
    return
  fi
  local base
  base="$(mktemp -d "$STATE_ROOT/lattice-nats-XXXXXX")" || {
    fail nats "cannot create a data directory under $STATE_ROOT"
    return
  }
  nohup nats-server -a 127.0.0.1 -p 4222 -js -sd "$base/data" > "$base/nats.log" 2>&1 < /dev/null &
  local pid=$!
  if wait_for port_open 4222; then
    report nats "started (pid $pid, 127.0.0.1:4222, JetStream in $base/data, log $base/nats.log)"
  else
    fail nats "nats-server did not listen on 127.0.0.1:4222 within 20 s (see $base/nats.log)"
  fi
}

etcd_healthy() { ETCDCTL_API=3 etcdctl --endpoints=127.0.0.1:2379 --command-timeout=2s endpoint health; }

check_etcd() {
  local installed=''
  if ! have etcd || ! have etcdctl; then
    local log="$STATE_ROOT/lattice-apt-etcd.log"
    if ! apt_install "$log" etcd-server etcd-client || ! have etcd || ! have etcdctl; then
      fail etcd "etcd is not installed and apt-get install -y etcd-server etcd-client failed (see $log)"
      return
    fi
    installed='installed etcd-server and etcd-client, '
  fi
  if etcd_healthy > /dev/null 2>&1; then
    report etcd "${installed}ok (127.0.0.1:2379)"
    return
  fi
  if port_open 2379; then
    fail etcd "something listens on 127.0.0.1:2379 but etcdctl endpoint health fails"
    return
  fi
  local base
  base="$(mktemp -d "$STATE_ROOT/lattice-etcd-XXXXXX")" || {
    fail etcd "cannot create a data directory under $STATE_ROOT"
    return
  }
  nohup etcd --name default --data-dir "$base/data" \
    --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
    --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster default=http://127.0.0.1:2380 > "$base/etcd.log" 2>&1 < /dev/null &
  local pid=$!
  if wait_for etcd_healthy; then
    report etcd "${installed}started (pid $pid, 127.0.0.1:2379, data $base/data, log $base/etcd.log)"
  else
    fail etcd "etcd did not become healthy on 127.0.0.1:2379 within 20 s (see $base/etcd.log)"
  fi
}

# Debian's Chromium for the console's browser tests (test/console/, playwright-core drives it; no
# browser download of Playwright's own). Not a server: installed once, nothing to start.
check_chromium() {
  if [ -x /usr/bin/chromium ]; then
    report chromium "ok (/usr/bin/chromium)"
    return
  fi
  local log="$STATE_ROOT/lattice-chromium-install.log"
  if ! apt_install "$log" chromium fonts-dejavu-core || [ ! -x /usr/bin/chromium ]; then
    fail chromium "apt-get install chromium failed (see $log)"
    return
  fi
  report chromium "installed (/usr/bin/chromium)"
}

check_postgres
check_pgvector
check_redis
check_nats
check_etcd
check_chromium

if [ "$failures" -gt 0 ]; then
  echo "test-services: $failures server(s) unavailable" >&2
  exit 1
fi
