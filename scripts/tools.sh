#!/usr/bin/env bash
# Installs what the local stack and the tests need, into git-ignored folders, only when
# missing: a Java runtime (apt), DynamoDB Local (npm package amplify-dynamodb-simulator,
# checked against pinned checksums), moto's SQS server (PyPI, in .tools/venv) and, with
# --dev, cargo-lambda (PyPI, same venv).
# Usage: scripts/tools.sh [--dev]
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS="$PWD/.tools"
mkdir -p "$TOOLS"

# Pinned: the package version, the upstream tarball checksum it records in emulator/sha256,
# and the checksum of the jar we run.
DDB_PKG_VERSION="2.9.30"
DDB_UPSTREAM_SHA256="55b425a9a42cfc728436eaf0e4ae64d688b64d177c99c4f4c4d7e3dbb3ac6c09"
DDB_JAR_SHA256="454305e9bc3e6ebcca5b62569869e31563b8d7e346474e94557b2600702146c7"
CARGO_LAMBDA_VERSION="1.9.2"
MOTO_VERSION="5.2.5"

say() { printf '[tools] %s\n' "$*" >&2; }

ensure_java() {
  if command -v java >/dev/null 2>&1; then return; fi
  say "installing a Java runtime (default-jre-headless) with apt"
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq default-jre-headless >/dev/null
}

ensure_dynamodb_local() {
  local dir="$TOOLS/dynamodb-local"
  if [ -f "$dir/DynamoDBLocal.jar" ] && [ -f "$dir/.verified" ]; then return; fi
  say "installing DynamoDB Local from npm (amplify-dynamodb-simulator@$DDB_PKG_VERSION)"
  local tmp
  tmp="$(mktemp -d)"
  (cd "$tmp" && npm pack --silent "amplify-dynamodb-simulator@$DDB_PKG_VERSION" >/dev/null 2>&1)
  tar -xzf "$tmp"/amplify-dynamodb-simulator-*.tgz -C "$tmp"
  local recorded
  recorded="$(tr -d '[:space:]' < "$tmp/package/emulator/sha256")"
  if [ "$recorded" != "$DDB_UPSTREAM_SHA256" ]; then
    say "emulator/sha256 is $recorded, expected $DDB_UPSTREAM_SHA256"; exit 1
  fi
  local jar_sum
  jar_sum="$(sha256sum "$tmp/package/emulator/DynamoDBLocal.jar" | cut -d' ' -f1)"
  if [ "$jar_sum" != "$DDB_JAR_SHA256" ]; then
    say "DynamoDBLocal.jar checksum is $jar_sum, expected $DDB_JAR_SHA256"; exit 1
  fi
  rm -rf "$dir"
  mv "$tmp/package/emulator" "$dir"
  touch "$dir/.verified"
  rm -rf "$tmp"
}

VENV="$TOOLS/venv"
ensure_venv() {
  [ -x "$VENV/bin/pip" ] || python3 -m venv "$VENV"
}

# The SQS emulator the webhook tests and `make dev` run (moto_server).
ensure_moto() {
  if [ -x "$VENV/bin/moto_server" ]; then return; fi
  ensure_venv
  say "installing moto[server] $MOTO_VERSION from PyPI into .tools/venv"
  "$VENV/bin/pip" install -q --disable-pip-version-check "moto[server]==$MOTO_VERSION"
}

ensure_cargo_lambda() {
  if [ -x "$VENV/bin/cargo-lambda" ]; then return; fi
  ensure_venv
  say "installing cargo-lambda $CARGO_LAMBDA_VERSION from PyPI into .tools/venv"
  "$VENV/bin/pip" install -q --disable-pip-version-check "cargo-lambda==$CARGO_LAMBDA_VERSION"
}

ensure_java
ensure_dynamodb_local
ensure_moto
if [ "${1:-}" = "--dev" ]; then ensure_cargo_lambda; fi
say "ready"
