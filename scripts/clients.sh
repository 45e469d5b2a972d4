#!/usr/bin/env bash
# make clients: generates the API's clients from docs/openapi.yaml and type-checks them, into
# target/clients/ (git-ignored; generated anew each time, nothing to publish):
# - Python: openapi-python-client (PyPI, pinned, .tools/clients-py), failing on any warning
#   (a schema it cannot read is dropped from the client, silently otherwise), and mypy
#   --strict over it and tests/clients/smoke.py, the workflow tests/tests/clients.rs runs;
# - TypeScript: openapi-typescript's types with openapi-fetch's client (npm, pinned,
#   .tools/clients-ts), and tsc over tests/clients/smoke.ts, the workflow
#   tests/tests/clients.rs runs against the real functions (compiled to
#   target/clients/typescript/smoke.js).
# Each request body and 2xx answer must come out typed in both (scripts/check-client-types.py:
# the Python client's code is read, the TypeScript types are asserted in typed.ts, which tsc
# compiles beside smoke.ts); an untyped one fails, named by its operation.
set -euo pipefail
cd "$(dirname "$0")/.."
PY_CLIENT_VERSION="0.29.1"
# what the generated client imports beside httpx and attrs (the generator brings those)
DATEUTIL_VERSION="2.9.0.post0"
MYPY_VERSION="1.18.2"
TS_VERSIONS=(openapi-typescript@7.13.0 openapi-fetch@0.14.1 typescript@5.9.3 @types/node@22.19.1)
PY=.tools/clients-py
TS=.tools/clients-ts
OUT=target/clients
if [ ! -x "$PY/bin/openapi-python-client" ] || [ ! -x "$PY/bin/mypy" ] ||
  ! "$PY/bin/python" -c "import dateutil" 2>/dev/null; then
  echo "[clients] installing openapi-python-client==$PY_CLIENT_VERSION and mypy==$MYPY_VERSION from PyPI into $PY" >&2
  python3 -m venv "$PY"
  "$PY/bin/pip" install -q --disable-pip-version-check "openapi-python-client==$PY_CLIENT_VERSION" \
    "python-dateutil==$DATEUTIL_VERSION" "mypy==$MYPY_VERSION"
fi
if [ ! -x "$TS/node_modules/.bin/tsc" ] || [ ! -d "$TS/node_modules/@types/node" ]; then
  echo "[clients] installing ${TS_VERSIONS[*]} from npm into $TS" >&2
  mkdir -p "$TS"
  npm install --silent --no-audit --no-fund --prefix "$TS" "${TS_VERSIONS[@]}" >/dev/null
fi
rm -rf "$OUT"
mkdir -p "$OUT/typescript"
echo "[clients] python: $OUT/python" >&2
# no post hooks: ruff (the generator's formatter) is not installed, and the client is
# left as generated
echo "post_hooks: []" > target/clients-python.yaml
"$PY/bin/openapi-python-client" generate --path docs/openapi.yaml --output-path "$OUT/python" \
  --config target/clients-python.yaml --fail-on-warning
[ -d "$OUT/python/catalog_api_client" ] || { echo "[clients] the Python client was not generated" >&2; exit 1; }
"$PY/bin/python" scripts/check-client-types.py python docs/openapi.yaml "$OUT/python/catalog_api_client"
# the generated package and the smoke workflow, as strictly as mypy checks
(cd "$OUT/python" && "../../../$PY/bin/mypy" --strict --no-incremental catalog_api_client ../../../tests/clients/smoke.py)
echo "[clients] typescript: $OUT/typescript" >&2
"$TS/node_modules/.bin/openapi-typescript" docs/openapi.yaml -o "$OUT/typescript/schema.d.ts" --silent
cp tests/clients/smoke.ts "$OUT/typescript/"
"$PY/bin/python" scripts/check-client-types.py typescript docs/openapi.yaml "$OUT/typescript/typed.ts"
ln -sfn "$PWD/$TS/node_modules" "$OUT/typescript/node_modules"
cat > "$OUT/typescript/tsconfig.json" <<'JSON'
{"compilerOptions": {"strict": true, "target": "ES2022", "module": "NodeNext",
  "moduleResolution": "NodeNext", "outDir": ".", "skipLibCheck": true, "types": ["node"]},
 "files": ["smoke.ts", "typed.ts"]}
JSON
echo '{"type": "module"}' > "$OUT/typescript/package.json"
"$TS/node_modules/.bin/tsc" -p "$OUT/typescript"
echo "[clients] generated and type-checked" >&2
