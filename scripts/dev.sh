#!/usr/bin/env bash
# The whole service locally, one command (make dev): installs what is missing, starts
# DynamoDB Local (data kept in .local/dynamodb) and moto (SQS and S3), creates the table,
# the delivery queues, the import bucket and queue, and a dev organization and key, runs the API's functions under
# `cargo lambda watch` behind its router on port 9000, and the local event source mappings
# (stream -> change-feed, queues -> webhook-delivery and import-worker), which run those
# functions themselves as Lambda does: a process that dies or outruns its timeout is started
# again (tests/src/bin/local-poller.rs). Prints the base URL and key (also in
# .local/env). Ctrl-C stops everything it started, after saving the list checkpoints.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
# Where the stack keeps its data, logs and env files (another folder runs a separate stack).
LOCAL="${CATALOG_DEV_DIR:-$ROOT/.local}"
export CATALOG_DEV_DIR="$LOCAL"
DDB_PORT="${CATALOG_DDB_PORT:-8000}"
API_PORT="${CATALOG_API_PORT:-9000}"
SQS_PORT="${CATALOG_SQS_PORT:-9324}"

scripts/tools.sh --dev
export PATH="$ROOT/.tools/venv/bin:$PATH"

pids=()
# List checkpoints live in moto's S3, in memory: kept beside the data they summarize (wiping
# the data wipes them) across restarts, so a restarted stack's first list starts from them.
CHECKPOINTS="$LOCAL/dynamodb/checkpoints"
keep_checkpoints=""
cleanup() {
  trap - INT TERM EXIT
  if [ -n "$keep_checkpoints" ]; then
    target/debug/local-poller checkpoints save "$CHECKPOINTS" || true
  fi
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  echo "[dev] stopped"
}
trap cleanup INT TERM EXIT

mkdir -p "$LOCAL/dynamodb"
echo "[dev] starting DynamoDB Local on 127.0.0.1:$DDB_PORT (data in $LOCAL/dynamodb)"
# Storage and the S3 emulator run in sessions of their own: a terminal's Ctrl-C signals the
# whole foreground process group, and they must outlive it until cleanup has saved the list
# checkpoints (held in moto's memory); cleanup stops them after.
(cd .tools/dynamodb-local && exec setsid java -Djava.library.path=./DynamoDBLocal_lib -jar DynamoDBLocal.jar \
  -sharedDb -disableTelemetry -dbPath "$LOCAL/dynamodb" -port "$DDB_PORT") >"$LOCAL/dynamodb.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 300); do
  (echo >"/dev/tcp/127.0.0.1/$DDB_PORT") 2>/dev/null && break
  sleep 0.1
done

echo "[dev] starting the SQS emulator (moto) on 127.0.0.1:$SQS_PORT"
setsid moto_server -H 127.0.0.1 -p "$SQS_PORT" >"$LOCAL/sqs.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 300); do
  (echo >"/dev/tcp/127.0.0.1/$SQS_PORT") 2>/dev/null && break
  sleep 0.1
done

export AWS_ENDPOINT_URL_DYNAMODB="http://127.0.0.1:$DDB_PORT"
export AWS_ENDPOINT_URL_DYNAMODB_STREAMS="$AWS_ENDPOINT_URL_DYNAMODB"
export AWS_ENDPOINT_URL_SQS="http://127.0.0.1:$SQS_PORT"
export AWS_ENDPOINT_URL_S3="http://127.0.0.1:$SQS_PORT"
export AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local
export CATALOG_TABLE=catalog CATALOG_LOCAL_MODE=1 CATALOG_DEBUG_HEADERS=1

echo "[dev] building"
cargo build --workspace --bins
target/debug/catalog-admin dev-setup --env-file "$LOCAL/env" --base-url "http://127.0.0.1:$API_PORT/v1" >/dev/null
target/debug/local-poller queues > "$LOCAL/queues.env"
# shellcheck disable=SC1091
source "$LOCAL/queues.env"
# List checkpoints have a bucket of their own, as deployed (infra/README.md, "Checkpoints");
# moto's S3 creates it from a plain PUT. Exported for local-poller's checkpoints save|restore.
export CATALOG_CHECKPOINT_BUCKET=catalog-checkpoints-local
curl -sf -X PUT "$AWS_ENDPOINT_URL_S3/$CATALOG_CHECKPOINT_BUCKET" >/dev/null
target/debug/local-poller checkpoints restore "$CHECKPOINTS" || true
keep_checkpoints=1

cat > "$LOCAL/functions.env" <<ENV
AWS_ENDPOINT_URL_DYNAMODB=$AWS_ENDPOINT_URL_DYNAMODB
AWS_REGION=$AWS_REGION
AWS_ACCESS_KEY_ID=$AWS_ACCESS_KEY_ID
AWS_SECRET_ACCESS_KEY=$AWS_SECRET_ACCESS_KEY
CATALOG_TABLE=$CATALOG_TABLE
CATALOG_LOCAL_MODE=1
CATALOG_DEBUG_HEADERS=1
CATALOG_USAGE_FLUSH_SECONDS=${CATALOG_USAGE_FLUSH_SECONDS:-5}
AWS_ENDPOINT_URL_SQS=$AWS_ENDPOINT_URL_SQS
AWS_ENDPOINT_URL_EVENTBRIDGE=$AWS_ENDPOINT_URL_SQS
CATALOG_EVENT_DESTINATIONS=arn:aws:sqs:us-east-1:123456789012:*,arn:aws:events:us-east-1:123456789012:event-bus/*
CATALOG_DELIVERY_QUEUE_URL=$CATALOG_DELIVERY_QUEUE_URL
CATALOG_DEAD_LETTER_QUEUE_URL=$CATALOG_DEAD_LETTER_QUEUE_URL
CATALOG_WEBHOOK_COALESCE_SECONDS=${CATALOG_WEBHOOK_COALESCE_SECONDS:-2}
CATALOG_WEBHOOK_RETRY_SCHEDULE=${CATALOG_WEBHOOK_RETRY_SCHEDULE:-5,10,30,60,120,300,600}
AWS_ENDPOINT_URL_S3=$AWS_ENDPOINT_URL_S3
CATALOG_IMPORT_BUCKET=$CATALOG_IMPORT_BUCKET
CATALOG_CHECKPOINT_BUCKET=$CATALOG_CHECKPOINT_BUCKET
CATALOG_IMPORT_QUEUE_URL=$CATALOG_IMPORT_QUEUE_URL
ENV

echo "[dev] starting functions with cargo lambda watch on 127.0.0.1:$API_PORT"
# Up to 4 processes per function, as Lambda runs several sandboxes: calls at once do not
# wait for each other (the event-driven functions run under the local poller, below).
# shellcheck disable=SC2046 # scripts/watch-args: one flag a line, no spaces
cargo lambda watch --invoke-address 127.0.0.1 --invoke-port "$API_PORT" --env-file "$LOCAL/functions.env" \
  --concurrency 4 $(grep -v '^#' scripts/watch-args) \
  >"$LOCAL/watch.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 600); do
  (echo >"/dev/tcp/127.0.0.1/$API_PORT") 2>/dev/null && break
  sleep 0.1
done

echo "[dev] starting the local event source mappings (stream -> change-feed, queues -> webhook-delivery, import-worker)"
# They run the event-driven functions themselves, with the functions' settings: as Lambda,
# a process that dies or outruns its timeout is started again, and one whose binary
# `cargo build --workspace --bins` replaced too (cargo lambda watch starts no killed process
# again). Their logs go to poller.log.
# shellcheck disable=SC1091
(set -a; source "$LOCAL/functions.env"; exec target/debug/local-poller run) >"$LOCAL/poller.log" 2>&1 &
pids+=($!)

# shellcheck disable=SC1091
source "$LOCAL/env"
CONSOLE_LINK="$(scripts/console-link.sh 2>/dev/null || echo "(make console-link failed: see $LOCAL/watch.log)")"
# cargo lambda watch starts a function's processes on its first requests, and the console's
# page asks for its files in parallel: start them now, so the first page load finds them up.
console="http://127.0.0.1:$API_PORT/console"
warming=()
for file in $(curl -s --max-time 120 "$console" | grep -oE 'console/assets/[0-9a-f]+/[a-z./]+' | sort -u); do
  curl -s -o /dev/null --max-time 120 "http://127.0.0.1:$API_PORT/$file" &
  warming+=($!)
done
# The same for the API functions: a GET of an identifier that does not exist starts a
# function's processes and touches no list (a first list call then waits for its data only).
for fn in products variants skus attributes categories metaobjects/_ webhooks; do
  curl -s -o /dev/null --max-time 120 -H "Authorization: Bearer $CATALOG_API_KEY" \
    "$CATALOG_BASE_URL/$fn/not-there" &
  warming+=($!)
done
for pid in "${warming[@]}"; do wait "$pid" || true; done
cat <<MSG

Catalog is running locally.
  Base URL: $CATALOG_BASE_URL
  API key:  $CATALOG_API_KEY      (also in $LOCAL/env)
  OpenAPI:  $CATALOG_BASE_URL/openapi.json  (no key needed; docs/openapi.yaml is the same)
  Console:  $CONSOLE_LINK
            (a single-use sign-in link, valid 10 minutes; \`make console-link\` makes another)

Try:
  curl -s -X PATCH "$CATALOG_BASE_URL/products/p1" -H "Authorization: Bearer $CATALOG_API_KEY" \\
       -H "Content-Type: application/json" -d '{"name":"Chair"}'
  curl -s "$CATALOG_BASE_URL/products/p1" -H "Authorization: Bearer $CATALOG_API_KEY"

Webhooks (deliveries are real POSTs; loopback http is allowed in local mode):
  curl -s -X POST "$CATALOG_BASE_URL/webhooks" -H "Authorization: Bearer $CATALOG_API_KEY" \
       -H "Content-Type: application/json" -d '{"url":"http://127.0.0.1:8080/hook","topics":["*"]}'

  Or an SQS queue of the local AWS emulator (EventBridge buses likewise: docs/webhooks.md,
  "AWS destinations"): create it, subscribe, read the verification message, then POST its
  token to /webhooks/{id}/verify:
  AWS_ENDPOINT_URL_SQS=$AWS_ENDPOINT_URL_SQS .tools/venv/bin/python scripts/local-sqs.py create events
  curl -s -X POST "$CATALOG_BASE_URL/webhooks" -H "Authorization: Bearer $CATALOG_API_KEY" \
       -H "Content-Type: application/json" \
       -d '{"destination":{"type":"sqs","queueUrl":"$AWS_ENDPOINT_URL_SQS/123456789012/events"},"topics":["*"]}'
  AWS_ENDPOINT_URL_SQS=$AWS_ENDPOINT_URL_SQS .tools/venv/bin/python scripts/local-sqs.py read events

Bulk writes, imports and exports (S3 is moto's, on the same port as SQS):
  curl -s -X PATCH "$CATALOG_BASE_URL/products" -H "Authorization: Bearer $CATALOG_API_KEY" \
       -H "Content-Type: application/x-ndjson" --data-binary \$'{"identifier":"p2"}\n{"identifier":"p3"}\n'
  target/debug/catalog-admin import --file FILE.ndjson --url "$CATALOG_BASE_URL" --key "$CATALOG_API_KEY"
  target/debug/catalog-admin export --out catalog.ndjson.gz --url "$CATALOG_BASE_URL" --key "$CATALOG_API_KEY"

Logs: $LOCAL/watch.log, $LOCAL/poller.log, $LOCAL/dynamodb.log, $LOCAL/sqs.log. Press Ctrl-C to stop.
MSG
echo "[dev] ready"
wait -n "${pids[@]}"
