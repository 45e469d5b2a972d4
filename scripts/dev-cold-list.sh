#!/usr/bin/env bash
# The first list call of a restarted `make dev` stack at catalog scale (issue 30's row "the
# same on make dev", docs/performance.md): runs scripts/dev.sh in its own folder and ports
# (.local-cold, 18000/19000/19324; your `make dev` data is not touched), seeds PRODUCTS
# products (default 50,000: one variant and three SKUs each, 250,000 entities, the bench's
# shapes) through the bulk API, lists until the list functions answer (they then write their
# checkpoints), stops the stack (which keeps the checkpoints), starts it again and times the
# first `/products` call with a product + SKU filter: seconds, calls, DynamoDB requests. A
# second run with the same PRODUCTS reuses the seeded catalog (not its checkpoints).
# Usage: scripts/dev-cold-list.sh [PRODUCTS]
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-50000}"
export CATALOG_DEV_DIR="$PWD/.local-cold"
export CATALOG_DDB_PORT=18000 CATALOG_API_PORT=19000 CATALOG_SQS_PORT=19324
# the checkpoint builder runs every 10 s here (5 minutes as deployed, 60 s in make dev)
export CATALOG_CHECKPOINT_SCHEDULE_SECONDS=10
seeded="$CATALOG_DEV_DIR/seeded-$N"
if [ -f "$seeded" ]; then
  # a second run reuses the catalog, without the checkpoints the last one kept
  rm -rf "$CATALOG_DEV_DIR/dynamodb/checkpoints"
else
  rm -rf "$CATALOG_DEV_DIR"
fi
mkdir -p "$CATALOG_DEV_DIR"
log="$CATALOG_DEV_DIR/dev-script.log"

dev=""
start() {
  scripts/dev.sh >>"$log" 2>&1 &
  dev=$!
  for _ in $(seq 1 3600); do
    grep -q '^\[dev\] ready' "$log" 2>/dev/null && return 0
    kill -0 "$dev" 2>/dev/null || { echo "the stack did not start: $log" >&2; exit 1; }
    sleep 0.5
  done
  echo "the stack was not ready within 30 minutes: $log" >&2
  exit 1
}
stop() {
  kill -TERM "$dev" 2>/dev/null || true
  wait "$dev" 2>/dev/null || true
  : >"$log"
}
trap stop EXIT

echo "[cold-list] starting the stack (builds first)"
start
# shellcheck disable=SC1091
source "$CATALOG_DEV_DIR/env"
if [ -f "$seeded" ]; then
  echo "[cold-list] the $N products seeded by an earlier run are there"
else
echo "[cold-list] seeding $N products"
python3 - "$CATALOG_BASE_URL" "$CATALOG_API_KEY" "$N" <<'PY'
import json, sys, time, urllib.request
base, key, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
COLORS, SIZES, MATERIALS = ["red", "blue", "green", "black", "white"], ["S", "M", "L"], ["oak", "pine", "steel"]
def call(method, path, body, ctype="application/json"):
    req = urllib.request.Request(base + path, data=body.encode(), method=method, headers={
        "Authorization": "Bearer " + key, "Content-Type": ctype})
    with urllib.request.urlopen(req, timeout=600) as r:
        return r.status
for entity, k, t, extra in [("product", "brand", "text", {}), ("product", "color", "select", {"options": COLORS}),
        ("product", "price", "price", {}), ("product", "material", "text", {}),
        ("product", "weight", "weight", {}), ("variant", "size", "select", {"options": SIZES}),
        ("sku", "price", "price", {}), ("sku", "ean", "text", {})]:
    call("POST", "/attributes", json.dumps({"displayName": k, "key": k, "targetEntity": entity, "type": t, **extra}))
def tree(i):
    p = f"p{i:07}"
    skus = [{"identifier": f"{p}-v-{s}", "values": {"price": f"{10 + (i + s) % 90}.00 EUR", "ean": f"400{i:07}{s}"}} for s in range(3)]
    return {"identifier": p, "name": f"Product {i}", "values": {
        "brand": f"Brand {i % 40:02}", "color": COLORS[i % 5], "price": f"{5 + i % 200}.{i % 100:02} EUR",
        "material": MATERIALS[i % 3], "weight": f"{1 + i % 20}.5 kg"},
        "variants": [{"identifier": f"{p}-v", "values": {"size": SIZES[i % 3]}, "skus": skus}]}
started = time.time()
for at in range(0, n, 1000):
    body = "\n".join(json.dumps(tree(i)) for i in range(at, min(n, at + 1000))) + "\n"
    assert call("PATCH", "/products", body, "application/x-ndjson") == 200
print(f"[cold-list] seeded in {time.time() - started:.0f} s")
PY
touch "$seeded"
fi

search='{"product.brand":[{"operator":"CONTAINS","value":"brand 1"}],"sku.price":[{"operator":"LESS_THAN","value":"20 EUR"}]}'
url="$CATALOG_BASE_URL/products?limit=100&search=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1]))' "$search")"
# Calls until the first 200: prints seconds, calls, DynamoDB requests.
first_answer() {
  local calls=0 requests=0 status="" started n
  started=$(date +%s%N)
  while [ "$status" != 200 ]; do
    calls=$((calls + 1))
    status=$(curl -s -o /dev/null -D "$CATALOG_DEV_DIR/headers" -w '%{http_code}' --max-time 600 \
      -H "Authorization: Bearer $CATALOG_API_KEY" "$url")
    n=$(grep -i '^x-catalog-ddb-requests:' "$CATALOG_DEV_DIR/headers" | tr -dc 0-9 || true)
    requests=$((requests + ${n:-0}))
    case "$status" in 200|503) ;; *) echo "status $status" >&2; exit 1 ;; esac
  done
  awk -v ns=$(($(date +%s%N) - started)) -v c="$calls" -v r="$requests" \
    'BEGIN { printf "%.2f s, %d calls, %d DynamoDB requests\n", ns / 1e9, c, r }'
}
echo "[cold-list] first filtered /products call, fresh stack: $(first_answer)"
# the processes that read the index ask for the products' and SKUs' checkpoints, and the
# checkpoint builder (every CATALOG_CHECKPOINT_SCHEDULE_SECONDS) writes them: wait for both
# (the stack saves what its S3 holds when it stops); the builder runs under the local poller,
# so its lines are in poller.log
written() { grep '"checkpoint build"' "$CATALOG_DEV_DIR/poller.log" | grep '"wrote":true' | grep -c "\"kind\":\"$1\"" || true; }
for _ in $(seq 1 1200); do
  [ "$(written product)" -ge 1 ] && [ "$(written sku)" -ge 1 ] && break
  sleep 0.5
done
echo "[cold-list] checkpoints written: products $(written product), SKUs $(written sku)"
echo "[cold-list] restarting the stack"
stop
start
echo "[cold-list] first filtered /products call, restarted stack: $(first_answer)"
