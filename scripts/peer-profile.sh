#!/usr/bin/env bash
# Where a warm GET's time goes, ours beside the peer's (issue 44, item 5): runs
# `bench --products 0 --ingest 0 --get 200 --samples N --peer` on the `perf` build (build it
# and scripts/peer.sh first) and, while the warm calls run, looks at both function processes:
#   MODE=strace  system calls of each for 4 s (strace -c): /tmp/strace-ours.txt, -peer.txt
#   MODE=perf    CPU samples of each for 4 s (perf record -e cpu-clock): /tmp/perf-ours.data,
#                -peer.data; `perf report -i FILE --sort dso` splits user from kernel time
#   MODE=pin     no tracer: both functions on CPU 1, the benchmark and DynamoDB Local on
#                CPU 0 (as on Lambda, where a function shares its CPU with neither)
# then prints the bench's figures. SAMPLES (default 4000) sets the number of warm calls.
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${MODE:-strace}"
export CATALOG_E2E_PROFILE=perf
bench=(target/perf/bench --products 0 --ingest 0 --get 200 --samples "${SAMPLES:-4000}" --peer)
[ "$mode" = pin ] && bench=(taskset -c 0 "${bench[@]}")
"${bench[@]}" > /tmp/bench-get.log 2>&1 &
run=$!

# a function process by its binary and its Lambda function name
pid_of() {
  for p in $(pgrep -f "$1"); do
    if tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx "AWS_LAMBDA_FUNCTION_NAME=$2"; then
      echo "$p"
      return
    fi
  done
}
ours="" peer=""
for _ in $(seq 1 2400); do
  ours=$(pid_of target/perf/products products@get) peer=$(pid_of get-product peer@get)
  [ -n "$ours" ] && [ -n "$peer" ] && break
  sleep 0.05
done
[ -n "$ours" ] && [ -n "$peer" ] || { echo "the function processes did not start"; exit 1; }
case "$mode" in
  strace)
    sleep 3
    timeout -s INT 4 strace -c -f -p "$ours" -o /tmp/strace-ours.txt &
    timeout -s INT 4 strace -c -f -p "$peer" -o /tmp/strace-peer.txt &
    wait %2 %3 || true ;;
  perf)
    sleep 3
    perf record -q -e cpu-clock -F 10000 -p "$ours" -o /tmp/perf-ours.data -- sleep 4 &
    perf record -q -e cpu-clock -F 10000 -p "$peer" -o /tmp/perf-peer.data -- sleep 4 &
    wait %2 %3 || true ;;
  pin)
    taskset -a -p -c 1 "$ours" > /dev/null
    taskset -a -p -c 1 "$peer" > /dev/null ;;
  *) echo "MODE is strace, perf or pin"; exit 2 ;;
esac
wait "$run"
grep -E '^\| |CPU per|against' /tmp/bench-get.log
