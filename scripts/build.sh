#!/usr/bin/env bash
# make build: every Lambda for arm64 (provided.al2023), release profile, zipped where the
# template's CodeUri points (target/lambda/<function>/bootstrap.zip), with each zip's size.
# Installs what is missing: cargo-lambda and zig (PyPI, .tools/venv) and the Rust standard
# library for aarch64-unknown-linux-gnu (rustup); nothing the tests or `make dev` need
# (`scripts/tools.sh --build`: no Java, npm or emulators on a build runner).
#
# `--no-lto` (what `make test` runs): the same cross-build and zips, opt-level 3, but without
# the release profile's fat LTO and single codegen unit, whose eleven serial LTO links are
# most of the build's time; it proves every function compiles and links for arm64 and lands
# where the template's CodeUri points. Deploy with the plain `make build`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/tools.sh --build
export PATH="$PWD/.tools/venv/bin:$PATH"
if [ "${1:-}" = "--no-lto" ]; then
  echo "[build] without fat LTO (CARGO_PROFILE_RELEASE_LTO=false, 16 codegen units): not the deploy build"
  export CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16
fi
if ! rustup target list --installed | grep -qx aarch64-unknown-linux-gnu; then
  echo "[build] adding the aarch64-unknown-linux-gnu target (rustup)"
  rustup target add aarch64-unknown-linux-gnu
fi
packages=()
for dir in functions/*/; do
  packages+=(--package "$(basename "$dir")")
done
echo "[build] cargo lambda build --release --arm64 --output-format zip ${packages[*]}"
cargo lambda build --release --arm64 --output-format zip "${packages[@]}"
echo "[build] zips (template CodeUri):"
for dir in functions/*/; do
  name="$(basename "$dir")"
  zip="target/lambda/$name/bootstrap.zip"
  [ -f "$zip" ] || { echo "[build] missing $zip" >&2; exit 1; }
  printf '  %-18s %8s KiB  %s\n' "$name" "$(( $(stat -c %s "$zip") / 1024 ))" "$zip"
done
