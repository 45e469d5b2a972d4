#!/usr/bin/env bash
# Installs what the console's browser test (tests/browser/console.test.mjs) needs, only when
# missing: Debian's Chromium at /usr/bin/chromium (apt; no browser download by Playwright) and
# the pinned npm packages of tests/browser (playwright-core, @axe-core/playwright) with
# `npm ci`, when tests/browser/node_modules is missing or older than package-lock.json.
# Idempotent: a second run does nothing. Usage: scripts/browser-tools.sh
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '[browser-tools] %s\n' "$*" >&2; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"
  elif command -v sudo >/dev/null 2>&1; then sudo "$@"
  else say "need root (or sudo) to run: $*"; return 1
  fi
}

if [ ! -x /usr/bin/chromium ]; then
  command -v apt-get >/dev/null 2>&1 || { say "missing /usr/bin/chromium and no apt-get: install Chromium"; exit 1; }
  say "installing chromium with apt"
  if ! as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; then
    say "apt-get install failed; running apt-get update and trying again"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  fi
  [ -x /usr/bin/chromium ] || { say "chromium installed but /usr/bin/chromium is missing"; exit 1; }
fi

command -v npm >/dev/null 2>&1 || { say "missing npm (Debian package npm, or Node.js with npm)"; exit 1; }
cd tests/browser
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules ]; then
  say "npm ci in tests/browser"
  npm ci --no-audit --no-fund --loglevel=error
  touch node_modules
fi
say "ready: $(/usr/bin/chromium --version 2>/dev/null || echo chromium), $(node -p 'require("./node_modules/playwright-core/package.json").version' 2>/dev/null | sed 's/^/playwright-core /')"
