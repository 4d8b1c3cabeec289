#===- cmake/AttncHalide.cmake - Halide's C++ SDK from the PyPI wheel ------===#
#
# attnc uses the official Halide 21 wheel (docs/dependencies.md says why). Its
# HalideConfig.cmake needs CMake >= 3.28 while Debian bookworm ships 3.25, so
# we make one imported target from the wheel's headers and libHalide.so.
#
# HALIDE_ROOT: the wheel's install dir, `python -c "import halide;
# print(halide.install_dir())"`; scripts/setup.sh passes it.

set(HALIDE_ROOT "" CACHE PATH "Halide SDK root (the halide wheel's install_dir())")
if(NOT HALIDE_ROOT OR NOT EXISTS "${HALIDE_ROOT}/include/Halide.h")
  message(FATAL_ERROR
    "Halide not found: set -DHALIDE_ROOT to the output of\n"
    "  .venv/bin/python -c 'import halide; print(halide.install_dir())'\n"
    "(scripts/setup.sh creates .venv with `pip install halide==21.0.0`).")
endif()
find_library(HALIDE_LIBRARY NAMES Halide PATHS "${HALIDE_ROOT}/lib64"
             "${HALIDE_ROOT}/lib" NO_DEFAULT_PATH REQUIRED)
get_filename_component(HALIDE_LIBRARY_DIR "${HALIDE_LIBRARY}" DIRECTORY)

add_library(attnc_halide INTERFACE)
target_include_directories(attnc_halide SYSTEM INTERFACE "${HALIDE_ROOT}/include")
target_link_libraries(attnc_halide INTERFACE "${HALIDE_LIBRARY}" dl pthread)
# Tools find libHalide.so where the wheel put it.
set(CMAKE_BUILD_RPATH "${HALIDE_LIBRARY_DIR};${LLVM_LIBRARY_DIR}")
