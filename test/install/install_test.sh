#!/usr/bin/env bash
# cmake --install into a fresh prefix, then use only what it installed:
# attnc compiles a model, attn-run runs it, and examples/run_model is built
# against the installed runtime twice, through find_package(attnrt) and
# through pkg-config, and runs the model with its weights.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR WORK_DIR
set -euo pipefail
build=$1 src=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
prefix=$work/prefix

cmake --install "$build" --prefix "$prefix" > "$work/install.log"
for f in bin/attnc bin/attn-run lib/libattnrt.so include/attn/attn.h \
    include/attn/attn.hpp include/attn/model_abi.h include/attn/dtypes.h \
    lib/cmake/attnrt/attnrtConfig.cmake lib/pkgconfig/attnrt.pc \
    share/attnc/include/HalideRuntime.h; do
  test -e "$prefix/$f" || { echo "FAIL: $f was not installed"; exit 1; }
done
# The private safetensors header is not part of the package.
test ! -e "$prefix/include/attn/safetensors.h"

# The installed tools, from a directory outside the build and source trees.
cd "$work"
model=$src/test/driver/load-time-weights.attn
"$prefix/bin/attnc" --version
"$prefix/bin/attnc" "$model" -o m.so
"$prefix/bin/attnc" "$model" --init-weights=w.safetensors --seed=2
"$prefix/bin/attn-run" m.so --weights w.safetensors --random B=1,S=4

# examples/ through the CMake package.
cmake -S "$src/examples" -B cmake-build -DCMAKE_PREFIX_PATH="$prefix" \
  > cmake.log
cmake --build cmake-build > build.log
./cmake-build/run_model m.so w.safetensors 2 5 | tee cmake-run.txt
grep -q "output y \[2, 5, 16\]" cmake-run.txt

# The same program through pkg-config.
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
c++ -std=c++17 "$src/examples/run_model.cpp" $(pkg-config --cflags --libs attnrt) \
  -o run_model_pc
./run_model_pc m.so w.safetensors 1 3 | tee pc-run.txt
grep -q "output y \[1, 3, 16\]" pc-run.txt

# A misuse is an error with the runtime's message, not a crash.
if ./run_model_pc m.so 2> err.txt; then
  echo "FAIL: a model that reads its weights ran without them"; exit 1
fi
grep -q "reads its 10 weights from a safetensors file at load" err.txt
echo "PASS: installed attnc, attn-run, attnrt (CMake package and pkg-config)"
