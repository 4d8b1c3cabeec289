#!/usr/bin/env bash
# Installs what attnc needs on Debian bookworm (apt + a venv for Halide's SDK
# from PyPI), then configures and builds into build/, and installs the Python
# package (python/) into .venv. Safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends \
  build-essential cmake ninja-build python3 python3-venv python3-dev \
  llvm-19-dev llvm-19-tools libmlir-19-dev mlir-19-tools \
  libfmt-dev libgtest-dev nlohmann-json3-dev pkg-config libpng-dev \
  libcli11-dev libxxhash-dev clang-19 \
  pocl-opencl-icd ocl-icd-opencl-dev

# Halide's official C++ SDK ships as a wheel (docs/dependencies.md says why
# this one rather than Debian's Halide 14). numpy is for the numeric tests;
# scikit-build-core and nanobind build the Python package, pytest tests it;
# tokenizers reads tokenizer.json (from_pretrained); ray[serve] runs attnc-serve.
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/pip install -q --disable-pip-version-check halide==21.0.0 numpy \
  scikit-build-core==1.1.2 nanobind==3.1.0 pytest==9.2.0 tokenizers==0.23.3 \
  "ray[serve]==2.60.0"
HALIDE_ROOT=$(.venv/bin/python -c 'import halide; print(halide.install_dir())')

# A unity build with clang 19: a file's time here is mostly its MLIR and
# Halide headers, which a unit of several files parses once, and clang's
# front end is the faster. The whole build took 117 s of wall time on 2 cores
# (GCC 12 one file a unit: 240 s; GCC unity 168 s; clang one file a unit
# 239 s; docs/progress.md, "CI time").
export CC=clang-19 CXX=clang++-19
cmake -S . -B build -G Ninja \
  -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_COMPILER="$CC" -DCMAKE_CXX_COMPILER="$CXX" \
  -DCMAKE_UNITY_BUILD=ON \
  -DMLIR_DIR=/usr/lib/llvm-19/lib/cmake/mlir \
  -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-19/build/utils/lit/lit.py \
  -DHALIDE_ROOT="$HALIDE_ROOT" \
  -DATTNC_REQUIRE_GPU_CHECKS="${ATTNC_REQUIRE_GPU_CHECKS:-OFF}"
cmake --build build -j"$(nproc)"

# `import attnc` in .venv: the package builds libattnrt from runtime/ into
# itself. Built in build/python (no build isolation: the build tools above),
# which ctest's python.install step reuses to reinstall the working tree.
.venv/bin/pip install -q --disable-pip-version-check --no-build-isolation \
  --config-settings=build-dir="$PWD/build/python" ./python
