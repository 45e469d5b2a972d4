#!/usr/bin/env bash
# Before and after: the benchmark (make bench) of this checkout driving, in turn, the function
# binaries built at BASE and at HEAD, all with the `perf` profile, RUNS times alternating, and
# the stripped size of every function binary at both. One harness for both sides, so only the
# functions differ. Usage: scripts/bench-compare.sh BASE [RUNS] [bench args...]
# e.g. `scripts/bench-compare.sh 84369b1 2 --ingest 1000 --products 10000 --samples 10 --timeout 120`
# (docs/performance.md quotes it). Builds BASE in a temporary worktree under target/.
set -euo pipefail
cd "$(dirname "$0")/.."
base="${1:?usage: scripts/bench-compare.sh BASE [RUNS] [bench args...]}"
runs="${2:-2}"
shift $(( $# >= 2 ? 2 : 1 ))
root="$PWD"
work="$root/target/bench-compare"
tree="$work/tree"

scripts/tools.sh
rm -rf "$work" && mkdir -p "$work/base/perf" "$work/head/perf"
git worktree remove --force "$tree" 2>/dev/null || true
git worktree add --detach -q "$tree" "$base"
trap 'git worktree remove --force "$tree" 2>/dev/null || true' EXIT
ln -s "$root/.tools" "$tree/.tools"

# Both sides build into this checkout's target/ (shared dependencies); each side's function
# binaries are copied out right after its build. The two sides' own crates carry the same
# names, and cargo judges an artifact fresh by the sources it recorded (the base's lie inside
# target/): each side's build starts with them cleaned, or it could take the other side's.
members=$(cargo metadata --no-deps --format-version 1 --locked |
  python3 -c 'import json, sys; print(" ".join("-p " + p["name"] for p in json.load(sys.stdin)["packages"]))')
cargo clean --profile perf $members
(cd "$tree" && CARGO_TARGET_DIR="$root/target" cargo build --workspace --bins --locked --profile perf)
for f in $(ls "$tree/functions"); do cp "target/perf/$f" "$work/base/perf/"; done
cargo clean --profile perf $members
cargo build --workspace --bins --locked --profile perf
for f in $(ls functions); do cp "target/perf/$f" "$work/head/perf/"; done
cp target/perf/bench "$work/bench"

echo "## Function binaries, stripped (perf profile)"
echo
echo "| function | $base (bytes) | HEAD (bytes) | change |"
echo "|---|---|---|---|"
for f in $(ls "$work/base/perf" "$work/head/perf" | grep -v : | sort -u); do
  size() { [ -f "$1" ] && strip -o "$work/stripped" "$1" && stat -c %s "$work/stripped" || echo 0; }
  b=$(size "$work/base/perf/$f"); h=$(size "$work/head/perf/$f")
  if [ "$b" -gt 0 ] && [ "$h" -gt 0 ]; then
    awk -v f="$f" -v b="$b" -v h="$h" 'BEGIN{printf "| %s | %d | %d | %+.1f %% |\n", f, b, h, (h-b)*100/b}'
  else
    echo "| $f | $b | $h | (only one side) |"
  fi
done
echo

for run in $(seq 1 "$runs"); do
  for side in base head; do
    echo "# Run $run, functions of $([ $side = base ] && echo "$base" || echo HEAD)"
    echo
    CARGO_TARGET_DIR="$work/$side" CATALOG_E2E_PROFILE=perf "$work/bench" "$@"
    echo
  done
done
