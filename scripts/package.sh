#!/usr/bin/env bash
# make package [DIST=dist]: builds every function (make build) and puts what a deploy needs
# into one folder, which a CI job can keep as its artifact and a later job (or another
# runner, with no Rust) deploys with `make deploy STAGE=<stage> DIST=<folder>`:
#   <folder>/template.yaml         infra/template.yaml, each CodeUri pointing at the zip below
#   <folder>/functions/<fn>.zip     the arm64 release build of every function
#   <folder>/manifest.sha256        sha256 of every file above (make deploy checks them)
#   <folder>/VERSION                the git commit it was built from
# Nothing here needs AWS: `make deploy` uploads the zips (`sam package`) into the stage's
# account and writes the packaged template, with S3 locations only, beside them.
# Usage: scripts/package.sh [--no-build] [--zips DIR] [OUT]
#   --no-build   take the zips as they are (DIR/<fn>/bootstrap.zip, default target/lambda)
set -euo pipefail
cd "$(dirname "$0")/.."
say() { printf '[package] %s\n' "$*" >&2; }
BUILD=1
ZIPS=target/lambda
OUT="${DIST:-dist}"
while [ $# -gt 0 ]; do
  case "$1" in
    --no-build) BUILD=0 ;;
    --zips) ZIPS="$2"; shift ;;
    -*) say "unknown option $1"; exit 2 ;;
    *) OUT="$1" ;;
  esac
  shift
done
[ "$BUILD" = 0 ] || scripts/build.sh

rm -rf "$OUT"
mkdir -p "$OUT/functions"
for dir in functions/*/; do
  name="$(basename "$dir")"
  zip="$ZIPS/$name/bootstrap.zip"
  [ -f "$zip" ] || { say "missing $zip: run make build (or drop --no-build)"; exit 1; }
  cp "$zip" "$OUT/functions/$name.zip"
done
# Every CodeUri of the template names a build zip; in the folder it names the copy.
sed -E 's#^( +CodeUri: )\.\./target/lambda/([a-z0-9-]+)/bootstrap\.zip$#\1functions/\2.zip#' \
  infra/template.yaml > "$OUT/template.yaml"
bad="$(grep -nE '^ +CodeUri: ' "$OUT/template.yaml" | grep -vE 'CodeUri: functions/[a-z0-9-]+\.zip$' || true)"
[ -z "$bad" ] || { say "CodeUri outside the package folder:"; printf '%s\n' "$bad" >&2; exit 1; }
for uri in $(sed -nE 's#^ +CodeUri: (functions/[a-z0-9-]+\.zip)$#\1#p' "$OUT/template.yaml"); do
  [ -f "$OUT/$uri" ] || { say "template.yaml names $uri, which is not built"; exit 1; }
done
git rev-parse HEAD > "$OUT/VERSION" 2>/dev/null || echo unknown > "$OUT/VERSION"
(cd "$OUT" && sha256sum template.yaml VERSION functions/*.zip > manifest.sha256)
say "$OUT: template.yaml, $(find "$OUT/functions" -name '*.zip' | wc -l) function zips, manifest.sha256 ($(cat "$OUT/VERSION"))"
