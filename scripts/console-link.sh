#!/usr/bin/env bash
# A new single-use sign-in link (10 minutes) to the web console of the stack `make dev`
# runs (make console-link), acting as the dev key of .local/env.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f .local/env ] && [ -f .local/functions.env ] || { echo "start the stack first: make dev" >&2; exit 1; }
set -a
# shellcheck disable=SC1091
source .local/functions.env
# shellcheck disable=SC1091
source .local/env
set +a
base="${CATALOG_BASE_URL%/v1}"
exec target/debug/catalog-admin console-link --key "$CATALOG_API_KEY" --url "$base/console"
