#!/usr/bin/env bash
# Runs the libFuzzer targets of fuzz/ coverage-guided, each for SECONDS
# (default 60), two at a time, on its committed corpus (fuzz/corpus/<target>;
# new inputs go to build-asan/fuzz/work/<target>). Prints each target's
# executions, coverage and crashes; exits non-zero when any target found a
# crash, leak or timeout (the input is in build-asan/fuzz/artifacts/<target>;
# once fixed, copy it into fuzz/corpus/<target> as a regression input).
#
#   scripts/fuzz.sh [SECONDS] [TARGET ...]
# Needs the asan build: cmake --preset asan && cmake --build build-asan
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(frontend_fuzzer safetensors_fuzzer
  descriptor_fuzzer weights_fuzzer inputs_fuzzer)
bin=build-asan/bin
out=build-asan/fuzz
for t in "${targets[@]}"; do
  [ -x "$bin/$t" ] || { echo "fuzz.sh: $bin/$t is not built: cmake --preset asan && cmake --build build-asan" >&2; exit 2; }
done

run_one() {
  local t=$1 seconds=$2 bin=$3 out=$4
  local work=$out/work/$t artifacts=$out/artifacts/$t/ log=$out/logs/$t.log
  mkdir -p "$work" "$artifacts" "$(dirname "$log")"
  local dict=()
  case $t in
    frontend_fuzzer) dict=(-dict=fuzz/frontend.dict) ;;
    safetensors_fuzzer|weights_fuzzer) dict=(-dict=fuzz/safetensors.dict) ;;
  esac
  local rc=0
  "$bin/$t" -max_total_time="$seconds" -timeout=60 -print_final_stats=1 \
    -artifact_prefix="$artifacts" "${dict[@]}" "$work" "fuzz/corpus/$t" \
    > "$log" 2>&1 || rc=$?
  local execs cov
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1)
  if [ $rc -eq 0 ]; then
    echo "$t: ${execs:-?} executions in ${seconds} s, ${cov:-no coverage line}, no crash"
  else
    echo "$t: FAILED (exit $rc) after ${execs:-?} executions; log: $log; inputs: $artifacts"
    grep -E 'ERROR|SUMMARY|_fuzzer: |==[0-9]+==' "$log" | head -8 | sed 's/^/  /'
  fi
  return $rc
}
export -f run_one
printf '%s\n' "${targets[@]}" |
  xargs -P 2 -I{} bash -c 'run_one "$@"' _ {} "$seconds" "$bin" "$out"
