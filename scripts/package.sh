#!/usr/bin/env bash
# make package [DIST=dist]: builds every function (make build) and keeps what a deploy needs
# as one release of DIST, addressed by its version: the git commit it was built from
# (scripts/version.sh, which scripts/deploy.sh runs too; with uncommitted edits, the commit
# and a digest of them). A CI job can keep DIST as its artifact and a later
# job (or another runner, with no Rust) deploys it with `make deploy STAGE=<stage> DIST=...`:
#   DIST/releases/<version>/template.yaml      infra/template.yaml, each CodeUri pointing at the zip below
#   DIST/releases/<version>/functions/<fn>.zip  the arm64 release build of every function
#   DIST/releases/<version>/manifest.sha256     sha256 of every file here (make deploy checks them)
#   DIST/releases/<version>/VERSION             <version>
# Earlier releases stay beside it (a package of the same version replaces only its own
# folder): a rollback deploys one of them, `make deploy RELEASE=<version>` (infra/README.md,
# "Roll back"). Nothing here needs AWS: `make deploy` uploads the zips (`sam package`) into
# the stage's account and writes the packaged template, with S3 locations only, beside them.
# Prints the release's folder.
# Usage: scripts/package.sh [--no-build] [--zips DIR] [DIST]
#   --no-build   take the zips as they are (DIR/<fn>/bootstrap.zip, default target/lambda)
set -euo pipefail
cd "$(dirname "$0")/.."
say() { printf '[package] %s\n' "$*" >&2; }
BUILD=1
ZIPS=target/lambda
DIST_DIR="${DIST:-dist}"
while [ $# -gt 0 ]; do
  case "$1" in
    --no-build) BUILD=0 ;;
    --zips) ZIPS="$2"; shift ;;
    -*) say "unknown option $1"; exit 2 ;;
    *) DIST_DIR="$1" ;;
  esac
  shift
done
# The version scripts/deploy.sh compares with the checked-out tree's (scripts/version.sh):
# the commit; with uncommitted edits, the commit and a digest of them, so a build of edits
# never passes for the commit; "unknown" outside a git checkout (which make deploy deploys
# only when RELEASE names it). Read before the build and again after: a build that changed
# a tracked file (Cargo.lock) would otherwise label its release with another version.
VERSION="$(scripts/version.sh)"
[ "$BUILD" = 0 ] || scripts/build.sh
AFTER="$(scripts/version.sh)"
[ "$AFTER" = "$VERSION" ] || {
  say "the build changed tracked files (version $VERSION before it, $AFTER after): commit or revert them, then package again"
  git --no-optional-locks status --short --untracked-files=no >&2 || true
  exit 1
}
RELEASE_DIR="$DIST_DIR/releases/$VERSION"
# Written aside, then moved into place: a package that fails leaves no half release.
OUT="$DIST_DIR/releases/.$VERSION.partial"
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
printf '%s\n' "$VERSION" > "$OUT/VERSION"
(cd "$OUT" && sha256sum template.yaml VERSION functions/*.zip > manifest.sha256)
rm -rf "$RELEASE_DIR"
mv "$OUT" "$RELEASE_DIR"
say "$RELEASE_DIR: template.yaml, $(find "$RELEASE_DIR/functions" -name '*.zip' | wc -l) function zips, manifest.sha256 (release $VERSION)"
kept="$(find "$(dirname "$RELEASE_DIR")" -mindepth 1 -maxdepth 1 -type d ! -name '.*' | wc -l)"
say "$(dirname "$RELEASE_DIR"): $kept releases kept (make deploy RELEASE=<version> deploys any of them)"
printf '%s\n' "$RELEASE_DIR"
