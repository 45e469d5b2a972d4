#!/usr/bin/env bash
# Invokes a function of the running local stack (make dev) with a sample event from events/,
# filling in the dev API key from .local/env: scripts/invoke.sh products events/products/get-product.json
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 2 ] || { echo "usage: scripts/invoke.sh FUNCTION EVENT_FILE" >&2; exit 2; }
# shellcheck disable=SC1091
source .local/env
export PATH="$PWD/.tools/venv/bin:$PATH"
tmp="$(mktemp)"
trap 'rm -f "$tmp"' EXIT
sed "s/\${CATALOG_API_KEY}/$CATALOG_API_KEY/" "$2" > "$tmp"
cargo lambda invoke "$1" --invoke-address 127.0.0.1 --invoke-port "${CATALOG_API_PORT:-9000}" --data-file "$tmp"
