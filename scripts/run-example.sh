#!/usr/bin/env bash
# The main job: compile an example model, write deterministic random weights
# for it, load them with the library, run it on a random input and time it.
# Usage: run-example.sh [MODEL] [B] [S]
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:-models/gpt2_block.attn}
batch=${2:-1}
seq=${3:-128}
out=build/example/$(basename "$model" .attn)
mkdir -p "$out"

time build/bin/attnc "$model" -o "$out/model.so"
ls -l "$out/model.so"
build/bin/attnc "$model" --init-weights="$out/weights.safetensors" --seed=1
run=(build/bin/attn-run "$out/model.so" --weights "$out/weights.safetensors")
"${run[@]}" --info
width=$(sed -n 's/^ *input *x *: *f32\[.*, *\([0-9]*\)\].*/\1/p' "$model")
if [[ -n "$width" ]]; then
  .venv/bin/python scripts/make_inputs.py "$out/inputs.safetensors" "x=${batch}x${seq}x${width}"
  "${run[@]}" --inputs "$out/inputs.safetensors" \
    --outputs "$out/outputs.safetensors" --bench 10
  echo "outputs written to $out/outputs.safetensors"
else
  # Models of token ids (models/gpt2.attn, ...): attn-run makes the inputs,
  # f32 ~ N(0, 1) and i32 all 0 (token 0; a length of 0 masks every key).
  "${run[@]}" --random "B=${batch},S=${seq}" --bench 10
fi
