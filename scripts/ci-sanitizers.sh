#!/usr/bin/env bash
# CI's sanitizer and fuzzing job (docs/robustness.md), after ./scripts/setup.sh
# has built build/: the suite under ASan + UBSan (build-asan, which also
# holds the fuzz targets), each fuzz target for FUZZ_SECONDS (default 30),
# and the runtime's tests under TSan (build-tsan). Any sanitizer report fails
# the test that hit it.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get install -y -q --no-install-recommends clang-19 libclang-rt-19-dev

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
# test/tsan.supp: what TSan misreads in Halide's uninstrumented runtime.
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1 suppressions=$PWD/test/tsan.supp}

# Under ASan: everything but the e2e, conformance and import tests, the
# Python package, the install test and the corpus replays (fuzz.sh below
# replays each corpus before it fuzzes), then one e2e configuration per
# feature, one import fixture per kind of model and the conformance models
# that no import fixture is (docs/robustness.md says why).
asan_e2e=(positions embeddings bahdanau_attention attention_map llama_mlp
  score_functions gpt_bf16 attention_weights cross_attention stacked_layers
  functions gpt_h4_causal_inout_packed bert_h12_none_outin_separate masks
  llm_attention)
asan_import=(gpt2 llama.sharded generate.gpt2 gemma2 bert vit bart t5_conditional)
asan_conformance=(nonfinite transformer_seq2seq mistral_lm gptj_lm mha_weights
  llama_mlp gemma2_head)
# The test models (test/models) are compiled by the plain build's attnc, as
# for TSan: the instrumented one took a minute of CI on them, and compiles
# decoder.attn in test/driver/gpu-run.mlir. The instrumented attnc reads the
# kernels the plain tests compiled from the cache (ATTNC_CACHE_AS), lowering
# each one it reads back: Halide's compile is not instrumented either way.
cmake --preset asan -DATTNC_MODEL_COMPILER="$PWD/build/bin/attnc" \
  -DATTNC_CACHE_AS="$PWD/build/bin/attnc"
cmake --build build-asan -j"$(nproc)"
ctest --test-dir build-asan --output-on-failure -j2 \
  -LE '^(e2e|conformance|python|import|fuzz)$' -E '^install$'
ctest --test-dir build-asan --output-on-failure -j2 -R "^(\
e2e\.($(IFS='|'; echo "${asan_e2e[*]}"))|\
import\.($(IFS='|'; echo "${asan_import[*]}"))|\
conformance\.($(IFS='|'; echo "${asan_conformance[*]}")))\$"

./scripts/fuzz.sh "${FUZZ_SECONDS:-30}"

cmake --preset tsan -DATTNC_MODEL_COMPILER="$PWD/build/bin/attnc"
tsan_tests=(attn_concurrency_test attn_extreme_inputs_test attn_runtime_test)
cmake --build build-tsan -j"$(nproc)" --target "${tsan_tests[@]}"
ctest --test-dir build-tsan --output-on-failure \
  -R "^($(IFS='|'; echo "${tsan_tests[*]}"))\$"
