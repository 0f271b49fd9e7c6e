#!/usr/bin/env bash
# Makes `promtool` available for test/ops/prometheus-rules.test.ts (the alert rules under
# ops/prometheus are checked and unit-tested with it). Idempotent: a promtool already on PATH is
# left alone. Otherwise installs Debian's `prometheus` package, which ships promtool, without its
# recommends (node exporter and the like). The package's service is not started: policy-rc.d is
# honoured where present, and a container without an init system starts nothing.
# Prints one line (ok / installed / FAILED: reason) and exits non-zero when promtool is still missing.
set -u

have() { command -v "$1" > /dev/null 2>&1; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then
    "$@"
  elif have sudo; then
    sudo -n "$@"
  else
    return 1
  fi
}

if have promtool; then
  printf '%-10s %s\n' promtool "ok ($(promtool --version 2>&1 | head -n 1))"
  exit 0
fi

if ! have apt-get; then
  printf '%-10s %s\n' promtool "FAILED: not on PATH and no apt-get to install the prometheus package"
  exit 1
fi

log="${TMPDIR:-/tmp}/lattice-install-promtool.log"
export DEBIAN_FRONTEND=noninteractive
if ! as_root apt-get update -q >> "$log" 2>&1 ||
  ! as_root apt-get install -y -q --no-install-recommends prometheus >> "$log" 2>&1; then
  printf '%-10s %s\n' promtool "FAILED: apt-get install prometheus failed (see $log)"
  exit 1
fi

if ! have promtool; then
  printf '%-10s %s\n' promtool "FAILED: the prometheus package installed but promtool is not on PATH"
  exit 1
fi
printf '%-10s %s\n' promtool "installed ($(promtool --version 2>&1 | head -n 1))"
