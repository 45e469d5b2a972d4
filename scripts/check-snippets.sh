#!/usr/bin/env bash
# Runs the signature-verification snippets of docs/webhooks.md (the ```python and ```javascript
# blocks) with python3 and node against the known test vector and the cases the doc promises:
# tampered body, expired timestamp, wrong secret, empty/truncated/partial headers must fail;
# unknown header parts and extra v1 values must not. One line per language; exit 1 on failure.
set -euo pipefail
cd "$(dirname "$0")/.."

DOC=docs/webhooks.md
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# extract LANG OUT: the body of the one ```LANG block of the doc.
extract() {
  local lang=$1 out=$2 count
  count=$(grep -c "^\`\`\`$lang\$" "$DOC" || true)
  if [ "$count" != 1 ]; then
    echo "[snippets] $DOC must hold exactly one \`\`\`$lang block (found $count)" >&2
    exit 1
  fi
  awk -v open="\`\`\`$lang" '
    $0 == open { inside = 1; next }
    inside && /^```/ { inside = 0; next }
    inside { print }
  ' "$DOC" >"$out"
  if ! grep -q 'verify' "$out"; then
    echo "[snippets] the \`\`\`$lang block of $DOC defines no verify function" >&2
    exit 1
  fi
}

# The test vector (also in shared/src/webhooks/signature.rs) and the cases built from it.
SECRET=whsec_test
T=1700000000
SIG=0133333033ad765cce6f241881b63d8f6835b3fa28d62257c87fef69feb87b87
HEADER="t=$T,v1=$SIG"
BODY='{\"id\":\"d1\",\"event\":\"product.updated\"}' # JSON-escaped
TAMPERED='{\"id\":\"d1\",\"event\":\"product.deleted\"}'
ZEROS=0000000000000000000000000000000000000000000000000000000000000000

cat >"$work/cases.json" <<JSON
[
  {"name": "known vector", "secret": "$SECRET", "header": "$HEADER", "body": "$BODY", "now": $T, "expect": true},
  {"name": "tampered body", "secret": "$SECRET", "header": "$HEADER", "body": "$TAMPERED", "now": $T, "expect": false},
  {"name": "now = t + 301", "secret": "$SECRET", "header": "$HEADER", "body": "$BODY", "now": $((T + 301)), "expect": false},
  {"name": "wrong secret", "secret": "whsec_other", "header": "$HEADER", "body": "$BODY", "now": $T, "expect": false},
  {"name": "empty header", "secret": "$SECRET", "header": "", "body": "$BODY", "now": $T, "expect": false},
  {"name": "header truncated by one char", "secret": "$SECRET", "header": "${HEADER%?}", "body": "$BODY", "now": $T, "expect": false},
  {"name": "only the t= part", "secret": "$SECRET", "header": "t=$T", "body": "$BODY", "now": $T, "expect": false},
  {"name": "extra unknown part v0=abc", "secret": "$SECRET", "header": "$HEADER,v0=abc", "body": "$BODY", "now": $T, "expect": true},
  {"name": "now = t - 300 (edge of tolerance)", "secret": "$SECRET", "header": "$HEADER", "body": "$BODY", "now": $((T - 300)), "expect": true},
  {"name": "a second, non-matching v1 first", "secret": "$SECRET", "header": "t=$T,v1=$ZEROS,v1=$SIG", "body": "$BODY", "now": $T, "expect": true},
  {"name": "spaces after commas", "secret": "$SECRET", "header": "t=$T, v1=$SIG", "body": "$BODY", "now": $T, "expect": true},
  {"name": "timestamp moved", "secret": "$SECRET", "header": "t=$((T + 100)),v1=$SIG", "body": "$BODY", "now": $((T + 100)), "expect": false},
  {"name": "empty t", "secret": "$SECRET", "header": "t=,v1=$SIG", "body": "$BODY", "now": $T, "expect": false},
  {"name": "no t", "secret": "$SECRET", "header": "v1=$SIG", "body": "$BODY", "now": $T, "expect": false},
  {"name": "two t parts", "secret": "$SECRET", "header": "t=$T,t=$T,v1=$SIG", "body": "$BODY", "now": $T, "expect": false},
  {"name": "non-hex v1", "secret": "$SECRET", "header": "t=$T,v1=zz${SIG:2}", "body": "$BODY", "now": $T, "expect": false},
  {"name": "part without =", "secret": "$SECRET", "header": "$HEADER,garbage", "body": "$BODY", "now": $T, "expect": false},
  {"name": "body with a trailing newline", "secret": "$SECRET", "header": "$HEADER", "body": "$BODY\\n", "now": $T, "expect": false}
]
JSON

extract python "$work/snippet.py"
cat "$work/snippet.py" - >"$work/check.py" <<'PY'


import json as _json
import sys as _sys

_cases = _json.load(open(_sys.argv[1], encoding="utf-8"))
_failed = 0
for _c in _cases:
    try:
        _got = verify(_c["secret"], _c["header"], _c["body"].encode("utf-8"), now=_c["now"])
    except Exception as _e:  # a snippet must answer False, not raise
        _got = f"exception: {_e!r}"
    if _got is not _c["expect"]:
        _failed += 1
        print(f"[snippets] python: FAILED {_c['name']}: got {_got!r}, expected {_c['expect']!r}",
              file=_sys.stderr)
if _failed:
    _sys.exit(1)
print(f"[snippets] python: {len(_cases)} checks passed")
PY

extract javascript "$work/snippet.js"
cat "$work/snippet.js" - >"$work/check.js" <<'JS'


{
  const cases = JSON.parse(require("fs").readFileSync(process.argv[2], "utf8"));
  let failed = 0;
  for (const c of cases) {
    let got;
    try {
      got = verify(c.secret, c.header, Buffer.from(c.body, "utf8"), c.now);
    } catch (e) {
      got = `exception: ${e.message}`;
    }
    if (got !== c.expect) {
      failed += 1;
      console.error(`[snippets] javascript: FAILED ${c.name}: got ${got}, expected ${c.expect}`);
    }
  }
  if (failed) process.exit(1);
  console.log(`[snippets] javascript: ${cases.length} checks passed`);
}
JS

status=0
python3 "$work/check.py" "$work/cases.json" || status=1
node "$work/check.js" "$work/cases.json" || status=1
exit "$status"
