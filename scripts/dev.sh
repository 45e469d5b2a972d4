#!/usr/bin/env bash
# The whole service locally, one command (make dev): installs what is missing, starts
# DynamoDB Local (data kept in .local/dynamodb), creates the table and a dev organization and
# key, and runs every function under `cargo lambda watch` behind its router on port 9000.
# Prints the base URL and key (also in .local/env). Ctrl-C stops everything it started.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
DDB_PORT="${CATALOG_DDB_PORT:-8000}"
API_PORT="${CATALOG_API_PORT:-9000}"

scripts/tools.sh --dev
export PATH="$ROOT/.tools/venv/bin:$PATH"

pids=()
cleanup() {
  trap - INT TERM EXIT
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  echo "[dev] stopped"
}
trap cleanup INT TERM EXIT

mkdir -p .local/dynamodb
echo "[dev] starting DynamoDB Local on 127.0.0.1:$DDB_PORT (data in .local/dynamodb)"
(cd .tools/dynamodb-local && exec java -Djava.library.path=./DynamoDBLocal_lib -jar DynamoDBLocal.jar \
  -sharedDb -disableTelemetry -dbPath "$ROOT/.local/dynamodb" -port "$DDB_PORT") >.local/dynamodb.log 2>&1 &
pids+=($!)
for _ in $(seq 1 300); do
  (echo >"/dev/tcp/127.0.0.1/$DDB_PORT") 2>/dev/null && break
  sleep 0.1
done

export AWS_ENDPOINT_URL_DYNAMODB="http://127.0.0.1:$DDB_PORT"
export AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local
export CATALOG_TABLE=catalog CATALOG_LOCAL_MODE=1 CATALOG_DEBUG_HEADERS=1

echo "[dev] building"
cargo build --workspace --bins
target/debug/catalog-admin dev-setup --env-file .local/env --base-url "http://127.0.0.1:$API_PORT/v1" >/dev/null

cat > .local/functions.env <<ENV
AWS_ENDPOINT_URL_DYNAMODB=$AWS_ENDPOINT_URL_DYNAMODB
AWS_REGION=$AWS_REGION
AWS_ACCESS_KEY_ID=$AWS_ACCESS_KEY_ID
AWS_SECRET_ACCESS_KEY=$AWS_SECRET_ACCESS_KEY
CATALOG_TABLE=$CATALOG_TABLE
CATALOG_LOCAL_MODE=1
CATALOG_DEBUG_HEADERS=1
ENV

echo "[dev] starting functions with cargo lambda watch on 127.0.0.1:$API_PORT"
cargo lambda watch --invoke-address 127.0.0.1 --invoke-port "$API_PORT" --env-file .local/functions.env \
  >.local/watch.log 2>&1 &
pids+=($!)
for _ in $(seq 1 600); do
  (echo >"/dev/tcp/127.0.0.1/$API_PORT") 2>/dev/null && break
  sleep 0.1
done

# shellcheck disable=SC1091
source .local/env
cat <<MSG

Catalog is running locally.
  Base URL: $CATALOG_BASE_URL
  API key:  $CATALOG_API_KEY      (also in .local/env)

Try:
  curl -s -X PATCH "$CATALOG_BASE_URL/products/p1" -H "Authorization: Bearer $CATALOG_API_KEY" \\
       -H "Content-Type: application/json" -d '{"name":"Chair"}'
  curl -s "$CATALOG_BASE_URL/products/p1" -H "Authorization: Bearer $CATALOG_API_KEY"

Logs: .local/watch.log, .local/dynamodb.log. Press Ctrl-C to stop.
MSG
echo "[dev] ready"
wait -n "${pids[@]}"
