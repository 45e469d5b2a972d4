#!/usr/bin/env bash
# Ingestion and lists at catalog scale (make bench): builds the functions and the benchmark
# with the optimized `perf` profile, then measures, on an in-memory DynamoDB Local and
# through the real function binaries, single vs. bulk PATCHes vs. the raw BatchWriteItem
# floor, optionally an import through S3 (--import N), and the first and warm list calls at
# --products N (default 10,000). Prints Markdown tables (docs/performance.md quotes them).
# Extra arguments go to the benchmark (`bench --help`), e.g.
# `scripts/bench.sh --products 50000 --ingest 2000 --timeout 120`. With BENCH_PROFILE=debug it
# reuses the test build (CI runs a small smoke run that way).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/tools.sh
profile="${BENCH_PROFILE:-perf}"
if [ "$profile" != debug ]; then
  cargo build --workspace --bins --locked --profile "$profile"
fi
export CATALOG_E2E_PROFILE="$profile"
exec "target/$profile/bench" "$@"
