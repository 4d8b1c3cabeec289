#!/usr/bin/env bash
# Sets up the benchmark: bench/.venv with the peers from PyPI.
#
#   bench/setup.sh            (then: bench/run.sh)
#
# Assumes the main project is built (./scripts/setup.sh): the benchmark times
# build/bin/attnc's libraries through the attnc Python package (python/),
# which this installs into bench/.venv with the runtime built from runtime/
# (re-run it after changing the runtime).
#
# Versions are pinned to the ones the benchmark was verified with.
#
# About torch and CUDA: PyPI's Linux x86-64 torch wheels are CUDA builds, and
# libtorch.so links libtorch_cuda.so, which links cuBLAS, cuDNN, cuFile,
# cuSPARSELt, NCCL, NVSHMEM ... at load time. `pip install torch --no-deps`
# (plus its pure-Python deps) was tried and `import torch` fails
# ("libcufile.so.0: cannot open shared object file"); the CPU-only wheels live
# on download.pytorch.org, which is not reachable here. So torch is installed
# with its declared dependencies, nvidia-* libraries included (~4 GB in
# bench/.venv). They are only loaded, never used: every system runs on the CPU.
set -euo pipefail

BENCH="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(dirname "$BENCH")"
VENV="$BENCH/.venv"

[[ -e "$REPO/build/bin/attnc" ]] || { echo "bench/setup.sh: $REPO/build/bin/attnc missing: build the project first (./scripts/setup.sh)" >&2; exit 1; }
command -v cc >/dev/null || { echo "bench/setup.sh: no C compiler 'cc' (needed for bench/fma_peak.c): apt-get install gcc" >&2; exit 1; }
command -v python3 >/dev/null || { echo "bench/setup.sh: python3 missing: apt-get install python3 python3-venv" >&2; exit 1; }

if [[ ! -x "$VENV/bin/python" ]]; then
  python3 -m venv "$VENV" || { echo "bench/setup.sh: python3 -m venv failed: apt-get install python3-venv" >&2; exit 1; }
fi
"$VENV/bin/pip" install --quiet --upgrade pip
# onnxscript: torch.onnx.export's default (torch.export-based) exporter needs it.
# transformers, safetensors: bench/models.py (GPT-2 small and BERT-base, whole).
# matplotlib: bench/roofline.py's plot.
"$VENV/bin/pip" install --quiet \
  numpy==2.4.6 \
  matplotlib==3.11.2 \
  torch==2.15.0 \
  onnx==1.23.2 \
  onnxscript==0.7.2 \
  onnxruntime==1.31.1 \
  openvino==2026.4.1 \
  transformers==5.23.0 \
  safetensors==0.8.0
# The attnc package (runtime binding): built from python/ and runtime/ in an
# isolated build (scikit-build-core and nanobind from PyPI).
"$VENV/bin/pip" install --quiet "$REPO/python"
# The decode peers (bench/decode.py, bench/peers.py; bench-only, no test uses
# them): CTranslate2 (a wheel), gguf (writes the GGUF files), tokenizers (the
# stand-in GPT-2 tokenizer of the converted directory) and llama-cpp-python,
# which PyPI has as source only: it builds llama.cpp (a few hundred C++
# files; ~20 min on 2 busy cores), for this CPU (GGML_NATIVE: AVX-512 here).
"$VENV/bin/pip" install --quiet \
  ctranslate2==4.8.5 \
  gguf==0.19.0 \
  tokenizers==0.23.3
CMAKE_ARGS="-DGGML_NATIVE=ON" CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}" \
  "$VENV/bin/pip" install --quiet llama-cpp-python==0.3.36

"$VENV/bin/python" - <<'EOF'
import attnc, ctranslate2, gguf, llama_cpp, numpy, onnx, onnxruntime, openvino, safetensors, torch, transformers
from importlib.metadata import version
print("bench/.venv ready: attnc", attnc.__version__, "| numpy", numpy.__version__, "| torch", torch.__version__,
      "| onnx", onnx.__version__, "| onnxruntime", onnxruntime.__version__,
      "| openvino", openvino.__version__, "| transformers", transformers.__version__,
      "| safetensors", safetensors.__version__, "| llama-cpp-python", llama_cpp.__version__,
      "| ctranslate2", ctranslate2.__version__, "| gguf", version("gguf"))
EOF
echo "run the benchmark with: bench/run.sh   (bench/run.sh --help for options)"
echo "whole models (GPT-2 small, BERT-base): bench/.venv/bin/python bench/models.py"
echo "decode against PyTorch, ONNX Runtime, llama.cpp, CTranslate2: bench/.venv/bin/python bench/decode.py"
