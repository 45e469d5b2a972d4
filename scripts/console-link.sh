#!/usr/bin/env bash
# A new single-use sign-in link (10 minutes) to the web console of the stack `make dev`
# runs (make console-link), acting as the dev key of .local/env.
set -euo pipefail
cd "$(dirname "$0")/.."
LOCAL="${CATALOG_DEV_DIR:-.local}"
[ -f "$LOCAL/env" ] && [ -f "$LOCAL/functions.env" ] || { echo "start the stack first: make dev" >&2; exit 1; }
set -a
# shellcheck disable=SC1091
source "$LOCAL/functions.env"
# shellcheck disable=SC1091
source "$LOCAL/env"
set +a
base="${CATALOG_BASE_URL%/v1}"
exec target/debug/catalog-admin console-link --key "$CATALOG_API_KEY" --url "$base/console"
