#!/usr/bin/env bash
# Installs what the local stack and the tests need, into git-ignored folders, only when
# missing: a Java runtime (apt), DynamoDB Local (npm package amplify-dynamodb-simulator,
# checked against pinned checksums), moto's SQS server (PyPI, in .tools/venv), the official
# standardwebhooks verifiers (PyPI into the venv, npm into .tools/node) and, with --dev,
# cargo-lambda (PyPI, same venv).
# First it checks the prerequisites (README.md, "Prerequisites"): a C toolchain, Python's
# venv, Node's npm and Java are installed with apt when missing (as root, or through sudo);
# a Rust toolchain (rustup, Rust >= $RUST_MIN) cannot come from a package registry, so a
# missing or older one stops here, naming the check that failed.
# --build (make build, make package): only what the arm64 build needs (a C toolchain,
# Python's venv, Rust, cargo-lambda): no Java, npm, DynamoDB Local, moto or verifiers.
# Usage: scripts/tools.sh [--dev | --build | --prerequisites]   (--prerequisites: only the checks)
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
# The official Standard Webhooks verifiers the webhook tests check deliveries with.
STANDARDWEBHOOKS_PY_VERSION="1.1.0"
STANDARDWEBHOOKS_NPM_VERSION="1.1.1"

# The oldest Rust the locked dependencies build with (their highest rust-version).
RUST_MIN="1.94.1"

say() { printf '[tools] %s\n' "$*" >&2; }

APT_UPDATED=""
apt_install() {
  command -v apt-get >/dev/null 2>&1 || return 1
  local sudo=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 || return 1
    sudo="sudo"
  fi
  say "installing $* with apt"
  if [ -z "$APT_UPDATED" ]; then $sudo apt-get update -qq || return 1; APT_UPDATED=1; fi
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >/dev/null
}

# ensure NAME CHECK APT_PACKAGE...: CHECK must succeed, after installing the packages if not.
ensure() {
  local name="$1" check="$2"
  shift 2
  if bash -c "$check" >/dev/null 2>&1; then return; fi
  if apt_install "$@" && bash -c "$check" >/dev/null 2>&1; then return; fi
  say "missing: $name. This check fails: \`$check\`. Install Debian's $* (apt-get install $*)"
  say "or the equivalent for your system; README.md, \"Prerequisites\", lists them all."
  exit 1
}

ensure_rust() {
  local version
  version="$(cargo --version 2>/dev/null | cut -d' ' -f2)"
  if [ -z "$version" ] || ! command -v rustup >/dev/null 2>&1; then
    say "missing: a Rust toolchain through rustup. This check fails: \`cargo --version && rustup --version\`."
    say "Install it from rustup.rs (no package registry has it), then run this again."
    exit 1
  fi
  if [ "$(printf '%s\n%s\n' "$RUST_MIN" "${version%%-*}" | sort -V | head -n1)" != "$RUST_MIN" ]; then
    say "Rust $version is older than $RUST_MIN, the oldest the locked dependencies build with."
    say "This check fails: \`cargo --version\` >= $RUST_MIN. Update it: rustup update stable"
    exit 1
  fi
}

build_prerequisites() {
  ensure "a C toolchain (cc, for crates with C parts)" "cc --version" build-essential
  ensure "Python's venv module with pip (python3-venv)" "python3 -c 'import ensurepip, venv'" python3-venv
  ensure_rust
}

prerequisites() {
  build_prerequisites
  ensure "Node.js's npm (fetches the DynamoDB Local package)" "npm --version" npm
  ensure "a Java runtime (runs DynamoDB Local)" "java -version" default-jre-headless
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

# The official `standardwebhooks` libraries for Python (in .tools/venv) and Node (in
# .tools/node): the webhook tests verify real deliveries with them, as consumers would.
ensure_standardwebhooks() {
  ensure_venv
  if ! "$VENV/bin/python" -c "import standardwebhooks" 2>/dev/null; then
    say "installing standardwebhooks $STANDARDWEBHOOKS_PY_VERSION from PyPI into .tools/venv"
    "$VENV/bin/pip" install -q --disable-pip-version-check "standardwebhooks==$STANDARDWEBHOOKS_PY_VERSION"
  fi
  if [ ! -f "$TOOLS/node/node_modules/standardwebhooks/package.json" ]; then
    say "installing standardwebhooks $STANDARDWEBHOOKS_NPM_VERSION from npm into .tools/node"
    mkdir -p "$TOOLS/node"
    npm install --silent --no-audit --no-fund --prefix "$TOOLS/node" \
      "standardwebhooks@$STANDARDWEBHOOKS_NPM_VERSION" >/dev/null
  fi
}

ensure_cargo_lambda() {
  if [ -x "$VENV/bin/cargo-lambda" ]; then return; fi
  ensure_venv
  say "installing cargo-lambda $CARGO_LAMBDA_VERSION from PyPI into .tools/venv"
  "$VENV/bin/pip" install -q --disable-pip-version-check "cargo-lambda==$CARGO_LAMBDA_VERSION"
}

if [ "${1:-}" = "--build" ]; then
  build_prerequisites
  ensure_cargo_lambda
  say "ready (build)"
  exit 0
fi
prerequisites
if [ "${1:-}" = "--prerequisites" ]; then exit 0; fi
ensure_dynamodb_local
ensure_moto
ensure_standardwebhooks
if [ "${1:-}" = "--dev" ]; then ensure_cargo_lambda; fi
say "ready"
