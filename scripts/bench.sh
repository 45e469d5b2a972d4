#!/usr/bin/env bash
# List latency at catalog scale (make bench): builds the functions and the benchmark with the
# optimized `perf` profile, then seeds 10,000 products / 30,000 SKUs into an in-memory
# DynamoDB Local and times GET /v1/products through the real products function. Prints a
# Markdown table (docs/performance.md quotes it). Extra arguments go to the benchmark, e.g.
# `scripts/bench.sh --products 2000 --samples 20`. With BENCH_PROFILE=debug it reuses the
# test build (CI runs a small smoke run that way).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/tools.sh
profile="${BENCH_PROFILE:-perf}"
if [ "$profile" != debug ]; then
  cargo build --workspace --bins --locked --profile "$profile"
fi
export CATALOG_E2E_PROFILE="$profile"
exec "target/$profile/bench" "$@"
