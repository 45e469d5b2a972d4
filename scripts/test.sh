#!/usr/bin/env bash
# The full test suite (make test), exactly what CI runs: installs what is missing, checks
# formatting and lints, lints the SAM template, validates docs/openapi.yaml, builds every
# binary once, runs unit, property and end-to-end tests (the e2e tests start their own
# DynamoDB Local, SQS emulator and function processes and stop them; the console's test
# drives Debian's Chromium with Playwright), a benchmark smoke run,
# and the arm64 release build (make build).
set -euo pipefail
cd "$(dirname "$0")/.."
# Each stage's line says when it started (seconds into the run), so a slow run shows where.
stage() { echo "[test] $* (at ${SECONDS}s)"; }

# --dev: cargo-lambda too, which the local-stack test runs (and the arm64 build needs).
scripts/tools.sh --dev
# Debian's Chromium and Playwright (npm) for the console's browser test.
scripts/browser-tools.sh
stage "cargo fmt --check"
cargo fmt --all -- --check
stage "cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
stage "shared/src: no import circles, no import against the layers of docs/architecture.md, no file over 600 lines"
python3 scripts/check-module-cycles.py
python3 scripts/check-layers.py
python3 scripts/check-layers.py --self-test
python3 scripts/check-file-sizes.py
stage "cargo build (binaries the e2e tests run)"
cargo build --workspace --bins --locked
stage "infra/template.yaml: SAM expansion, cfn-lint, checkov, IAM wildcard scan"
scripts/lint-template.sh
stage "docs/openapi.yaml: OpenAPI 3.1 validation"
scripts/check-openapi.sh
# no break of the last release's clients unless docs/openapi-breaks.txt allows it; the self-test first
.tools/openapi/bin/python scripts/check-openapi-breaks.py --self-test
.tools/openapi/bin/python scripts/check-openapi-breaks.py
stage "clients generated from docs/openapi.yaml (Python, TypeScript), type-checked"
scripts/clients.sh
stage "webhook verification snippets in docs/webhooks.md (python3, node)"
scripts/check-snippets.sh
stage "cargo test"
mkdir -p target
# --no-fail-fast: a failing test binary does not hide the results of the others.
cargo test --workspace --locked --no-fail-fast 2>&1 | tee target/test.log
stage "benchmark smoke run (make bench at 200 products, on the test build)"
BENCH_PROFILE=debug scripts/bench.sh --products 200 --ingest 100 --write-shapes 20 --get 20 --samples 3
# the event figures: AWS destinations and filtered subscriptions (issue 41)
BENCH_PROFILE=debug scripts/bench.sh --products 0 --ingest 0 --destinations 5 --filtered 40 --filtered-subs 3
# the change feed's cost of history (issue 42) and an ERP sync's delivery latency (issue 60)
BENCH_PROFILE=debug scripts/bench.sh --products 0 --ingest 0 --history 30 --sync 20
stage "arm64 build of every function (make build without fat LTO), with zip sizes"
scripts/build.sh --no-lto
stage "done"
# One closing line for the whole run (cargo prints one per test binary, the last often "0 passed").
awk '/^test result:/ {p += $4; f += $6} END {printf "summary: %d passed, %d failed\n", p, f}' target/test.log
