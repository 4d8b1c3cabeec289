#!/usr/bin/env bash
# cmake --install into a fresh prefix, move the prefix, then use only what it
# installed with the clone out of sight: the source tree, the build tree, its
# .venv and the Halide wheel are hidden under empty tmpfs mounts in a private
# mount namespace (unshare; as root or through a user namespace), and every
# command runs in a bare environment (env -i). There, attnc compiles a model
# (hand, auto and GPU targets), attn-run runs it, examples/run_model is built
# against the installed runtime twice, through find_package(attnrt) and
# through pkg-config, examples/generate generates from the GPT-2 import
# fixture, and the Python package, installed from its wheel into a
# fresh virtual environment, finds the installed attnc on PATH, in its own
# prefix and next to its Python, compiles and runs the model. Without mount
# namespaces the commands still run under env -i with the moved prefix, and
# the test says the clone was visible.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR WORK_DIR PYTHON HALIDE_ROOT
set -euo pipefail
build=$(realpath "$1") src=$(realpath "$2") work=$3 python=$4
halide=$(realpath "$5")
rm -rf "$work" && mkdir -p "$work"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/attnc-install-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
for d in "$src" "$build" "$halide"; do
  case "$tmp/" in "$d"/*)
    echo "FAIL: the temporary directory $tmp is inside $d, which the test" \
         "hides: set TMPDIR elsewhere"; exit 1 ;;
  esac
done
fail() { echo "FAIL: $*"; exit 1; }

cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
for f in bin/attnc bin/attn-run lib/libattnrt.so include/attn/attn.h \
    include/attn/attn.hpp include/attn/model_abi.h include/attn/dtypes.h \
    lib/cmake/attnrt/attnrtConfig.cmake lib/pkgconfig/attnrt.pc \
    lib/attnc/libHalide.so share/attnc/include/HalideRuntime.h \
    share/attnc/include/HalideRuntimeCuda.h \
    share/attnc/include/HalideRuntimeOpenCL.h; do
  test -e "$work/prefix/$f" || fail "$f was not installed"
done
# The private safetensors header is not part of the package.
test ! -e "$work/prefix/include/attn/safetensors.h"

# The prefix moves; nothing may point back to where it was installed.
prefix=$tmp/moved
mv "$work/prefix" "$prefix"

# No installed program or library names the clone, its build or the wheel
# in its RUNPATH: only $ORIGIN-relative and system directories.
for elf in "$prefix"/bin/* "$prefix"/lib/*.so* "$prefix"/lib/attnc/*.so; do
  test -L "$elf" && continue
  readelf -d "$elf" | grep -E 'R(UN)?PATH' > "$work/rpath.txt" || true
  for d in "$src" "$build" "$halide" "$work"; do
    if grep -qF "$d" "$work/rpath.txt"; then
      fail "$elf has a RUNPATH into $d: $(cat "$work/rpath.txt")"
    fi
  done
done

# What the hidden runs need from the source tree, copied out of it.
mkdir "$tmp/run"
cp "$src/test/driver/load-time-weights.attn" "$tmp/run/model.attn"
cp -r "$src/examples" "$tmp/examples"
cp -r "$src/test/import/fixtures/gpt2" "$tmp/run/gpt2"

# The Python package: its wheel, built here (scikit-build-core and nanobind
# from the clone's .venv, as python.install does; build/test/install-python
# keeps the build), installed into a fresh virtual environment. numpy, its
# one dependency, is copied from the clone's .venv: no index is asked.
"$python" -m pip wheel --quiet --disable-pip-version-check --no-index \
  --no-deps --no-build-isolation --wheel-dir "$tmp/wheel" \
  --config-settings=build-dir="$build/test/install-python" "$src/python" \
  > "$work/wheel.log" 2>&1 || { cat "$work/wheel.log"; fail "pip wheel python/"; }
"$python" -m venv "$tmp/venv"
site=$("$tmp/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
numpy=$("$python" -c 'import numpy, os; print(os.path.dirname(numpy.__file__))')
cp -r "$numpy" "$(dirname "$numpy")"/numpy-*.dist-info "$site/"
if [ -d "$numpy.libs" ]; then cp -r "$numpy.libs" "$site/"; fi
"$tmp/venv/bin/python" -m pip install --quiet --disable-pip-version-check \
  --no-index --no-deps "$tmp"/wheel/attnc-*.whl
# A second copy of the package inside attnc's own prefix, for "its prefix".
"$tmp/venv/bin/python" -m pip install --quiet --disable-pip-version-check \
  --no-index --no-deps --ignore-installed --prefix "$prefix" \
  "$tmp"/wheel/attnc-*.whl
prefix_site=$(echo "$prefix"/lib/python3*/site-packages)
test -d "$prefix_site" || fail "pip install --prefix put no package in $prefix/lib"

# hidden CMD...: CMD with an empty tmpfs over the source tree, the build tree
# and the Halide wheel, in a bare environment (PATH: the moved prefix's bin,
# then the system's), in $tmp/run.
cat > "$tmp/hide.sh" <<'EOF'
#!/bin/sh
# hide.sh N DIR... -- VAR=VALUE... CMD...
n=$1; shift
while [ "$n" -gt 0 ]; do
  if [ -d "$1" ]; then mount -t tmpfs -o size=1m attnc-hidden "$1" || exit 1; fi
  shift; n=$((n - 1))
done
shift
exec env -i "$@"
EOF
chmod +x "$tmp/hide.sh"
if unshare -m true 2> /dev/null; then
  hide=(unshare -m "$tmp/hide.sh" 3 "$src" "$build" "$halide" --)
elif unshare -rm true 2> /dev/null; then
  hide=(unshare -rm "$tmp/hide.sh" 3 "$src" "$build" "$halide" --)
else
  hide=(env -i)
  echo "NOTE: no mount namespace (unshare -m, unshare -rm): the clone stays" \
       "visible; the tools run with the moved prefix under env -i only"
fi
env_vars=(HOME="$tmp" TMPDIR="$tmp" LANG=C.UTF-8)
hidden() {
  (cd "$tmp/run" && "${hide[@]}" "${env_vars[@]}" \
     PATH="$prefix/bin:/usr/bin:/bin" "$@")
}
# The same, with no attnc on PATH.
hidden_nopath() {
  (cd "$tmp/run" && "${hide[@]}" "${env_vars[@]}" PATH=/usr/bin:/bin "$@")
}

if [ "${hide[0]}" = unshare ]; then
  hidden sh -c "test ! -e '$src/CMakeLists.txt' && test ! -e \
'$build/CMakeCache.txt' && test ! -e '$halide/include/Halide.h'" ||
    fail "the clone, the build tree or the Halide wheel is still visible"
fi

# Every library the tools load resolves, and none in the hidden trees.
for elf in "$prefix/bin/attnc" "$prefix/bin/attn-run" "$prefix/lib/libattnrt.so"; do
  hidden ldd "$elf" > "$work/ldd.txt" 2>&1 || true
  if grep -q "not found" "$work/ldd.txt"; then
    fail "$elf: $(grep "not found" "$work/ldd.txt")"
  fi
  for d in "$src" "$build" "$halide"; do
    if grep -qF "$d" "$work/ldd.txt"; then
      fail "$elf loads from $d: $(grep -F "$d" "$work/ldd.txt")"
    fi
  done
done
hidden ldd "$prefix/bin/attnc" | grep "libHalide.so =>" > "$work/ldd.txt" || true
grep -qE "=> $prefix/(bin/\.\./)?lib/attnc/libHalide.so " "$work/ldd.txt" ||
  fail "attnc does not load the libHalide.so installed with it: $(cat "$work/ldd.txt")"

# The installed tools.
hidden attnc --version
hidden attnc model.attn -o m.so
hidden attnc model.attn --init-weights=w.safetensors --seed=2
hidden attn-run m.so --weights w.safetensors --random B=1,S=4
# Embedding runs the init kernels through the installed libattnrt.
hidden attnc model.attn --weights w.safetensors -o embedded.so
hidden attn-run embedded.so --random B=1,S=4
# Halide's autoscheduler plugin, when the build had one, from the prefix.
if ls "$prefix"/lib/attnc/libautoschedule_*.so > /dev/null 2>&1; then
  hidden attnc model.attn --schedule=auto -o auto.so
  hidden attn-run auto.so --weights w.safetensors --random B=2,S=3
fi
# GPU libraries compile (no GPU needed): their glue's Halide headers.
hidden attnc model.attn --target=host-opencl -o cl.so
hidden attnc model.attn --target=host-cuda -o cuda.so

# examples/ through the CMake package.
hidden cmake -S "$tmp/examples" -B "$tmp/cmake-build" \
  -DCMAKE_PREFIX_PATH="$prefix" > "$work/cmake.log"
hidden cmake --build "$tmp/cmake-build" > "$work/build.log"
hidden "$tmp/cmake-build/run_model" m.so w.safetensors 2 5 | tee "$work/cmake-run.txt"
grep -q "output y \[2, 5, 16\]" "$work/cmake-run.txt"
# examples/generate: the GPT-2 fixture, imported and compiled by the
# installed attnc, gives transformers' greedy ids (its text_golden.json).
hidden attnc gpt2 -o gpt2.so
hidden "$tmp/cmake-build/generate" gpt2.so gpt2/model.safetensors 12 \
  27,39,29,52,30 | tee "$work/generate.txt"
grep -qx "66 66 77 38 38 38 38 38 38 38 38 38" "$work/generate.txt"

# The same program through pkg-config.
env_vars+=(PKG_CONFIG_PATH="$prefix/lib/pkgconfig")
hidden sh -c 'c++ -std=c++17 "$1" $(pkg-config --cflags --libs attnrt) -o "$2"' \
  sh "$tmp/examples/run_model.cpp" "$tmp/run_model_pc"
hidden "$tmp/run_model_pc" m.so w.safetensors 1 3 | tee "$work/pc-run.txt"
grep -q "output y \[1, 3, 16\]" "$work/pc-run.txt"

# A misuse is an error with the runtime's message, not a crash.
if hidden "$tmp/run_model_pc" m.so 2> "$work/err.txt"; then
  fail "a model that reads its weights ran without them"
fi
grep -q "reads its 10 weights from a safetensors file at load" "$work/err.txt"

# Python, from the fresh venv: attnc.compile finds the installed attnc on
# PATH; with none on PATH, in the prefix the package is installed in; then
# next to the venv's python (a link in its bin/, the venv not activated).
cat > "$tmp/run/use.py" <<'EOF'
import sys, numpy as np, attnc
want, lib, package = sys.argv[1], sys.argv[2], sys.argv[3]
assert attnc.__file__.startswith(package + "/"), f"imported {attnc.__file__}, want {package}: {sys.path}"
exe = attnc.find_attnc()
assert exe == want, f"find_attnc() is {exe}, want {want}"
attnc.compile("model.attn", lib)
with attnc.load(lib, weights="w.safetensors") as m:
    y = m.run({"x": np.ones((2, 3, 16), np.float32)})["y"]
assert y.shape == (2, 3, 16) and np.isfinite(y).all(), y.shape
print(f"python: {attnc.__file__} compiled {lib} with {exe}, ran it: y {list(y.shape)}")
EOF
hidden "$tmp/venv/bin/python" use.py "$prefix/bin/attnc" py-path.so "$site"
env_vars+=(PYTHONPATH="$prefix_site")
hidden_nopath "$tmp/venv/bin/python" use.py "$prefix/bin/attnc" py-prefix.so \
  "$prefix_site"
unset 'env_vars[-1]'
ln -s "$prefix/bin/attnc" "$tmp/venv/bin/attnc"
hidden_nopath "$tmp/venv/bin/python" use.py "$tmp/venv/bin/attnc" py-venv.so \
  "$site"
echo "PASS: installed attnc, attn-run, attnrt (CMake package and pkg-config)" \
     "and the Python package, from a moved prefix with the clone hidden"
