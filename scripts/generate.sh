#!/usr/bin/env bash
# make generate: rewrites every file derived from the route tables and the schemas, after a
# route, a body type or an answer type changed: docs/openapi.yaml (the published document),
# shared/src/api/openapi/document.json (the copy `products` serves), shared/src/api/served.rs
# (the fallback's handler-free routes) and the local router block of Cargo.toml. The tests
# that keep each equal to the tables name this command. catalog-admin compiles served.rs
# itself: should a change (a renamed scope) leave that file not compiling, fix its line by
# hand first, then run this.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet --locked -p catalog --bin catalog-admin
admin=target/debug/catalog-admin
"$admin" openapi > docs/openapi.yaml
"$admin" openapi-json > shared/src/api/openapi/document.json
"$admin" served-rs > shared/src/api/served.rs
"$admin" router-toml > target/router.toml
python3 - <<'PY'
import re
cargo = open('Cargo.toml').read()
block = open('target/router.toml').read()
start, end = '# BEGIN router\n[workspace.metadata.lambda.watch.router]\n', '# END router'
i, j = cargo.index(start) + len(start), cargo.index(end)
open('Cargo.toml', 'w').write(cargo[:i] + block + cargo[j:])
PY
git status --short docs/openapi.yaml shared/src/api/openapi/document.json shared/src/api/served.rs Cargo.toml
