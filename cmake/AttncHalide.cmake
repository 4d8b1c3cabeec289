#===- cmake/AttncHalide.cmake - Halide's C++ SDK from the PyPI wheel ------===#
#
# attnc uses the official Halide 21 wheel (docs/dependencies.md says why). Its
# HalideConfig.cmake needs CMake >= 3.28 while Debian bookworm ships 3.25, so
# we make one imported target from the wheel's headers and libHalide.so.
#
# HALIDE_ROOT: the wheel's install dir, `python -c "import halide;
# print(halide.install_dir())"`; scripts/setup.sh passes it, and without it
# the .venv that setup.sh made is asked (so presets need not name it).

set(HALIDE_ROOT "" CACHE PATH "Halide SDK root (the halide wheel's install_dir())")
if(NOT HALIDE_ROOT AND EXISTS "${PROJECT_SOURCE_DIR}/.venv/bin/python")
  execute_process(
    COMMAND "${PROJECT_SOURCE_DIR}/.venv/bin/python" -c
            "import halide; print(halide.install_dir())"
    OUTPUT_VARIABLE attnc_venv_halide OUTPUT_STRIP_TRAILING_WHITESPACE
    ERROR_QUIET)
  if(attnc_venv_halide)
    set(HALIDE_ROOT "${attnc_venv_halide}" CACHE PATH
        "Halide SDK root (the halide wheel's install_dir())" FORCE)
  endif()
endif()
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

# --schedule=auto: which of the wheel's autoscheduler plugins
# (lib64/libautoschedule_<name>.so) schedules the kernels. Mullapudi2016: on
# the GPT-2 block it compiles in seconds and its schedules run 1.3-1.6x
# faster than Adams2019's (with Adams2019's built-in weights), which takes ~2
# minutes and 3 GB per compile (numbers in schedules/AutoSchedule.cpp).
# Li2018 is for gradient pipelines and Anderson2021 for GPUs.
# The plugin's absolute path is compiled into attnc (schedules/CMakeLists.txt;
# the environment variable ATTNC_AUTOSCHEDULER_PLUGIN overrides it). If it is
# missing here, or later, `--schedule=auto` says so and how to fix it, while
# the hand and naive schedules still work.
set(ATTNC_AUTOSCHEDULER "Mullapudi2016" CACHE STRING
    "Halide autoscheduler behind --schedule=auto")
set_property(CACHE ATTNC_AUTOSCHEDULER PROPERTY STRINGS
             Adams2019 Mullapudi2016 Li2018 Anderson2021)
string(TOLOWER "${ATTNC_AUTOSCHEDULER}" _attnc_autoscheduler_lower)
find_file(ATTNC_AUTOSCHEDULER_PLUGIN_PATH
          NAMES "libautoschedule_${_attnc_autoscheduler_lower}.so"
          PATHS "${HALIDE_LIBRARY_DIR}" "${HALIDE_ROOT}/lib64" "${HALIDE_ROOT}/lib"
          NO_DEFAULT_PATH NO_CACHE)
if(NOT ATTNC_AUTOSCHEDULER_PLUGIN_PATH)
  message(WARNING
    "Halide's ${ATTNC_AUTOSCHEDULER} autoscheduler plugin "
    "(libautoschedule_${_attnc_autoscheduler_lower}.so) is not in "
    "${HALIDE_LIBRARY_DIR}: attnc --schedule=auto will report an error and "
    "its e2e tests are skipped. Set -DATTNC_AUTOSCHEDULER to one that is there "
    "(Mullapudi2016 or Adams2019), or reinstall the halide wheel.")
  set(ATTNC_AUTOSCHEDULER_PLUGIN_PATH "")
else()
  message(STATUS "attnc --schedule=auto: ${ATTNC_AUTOSCHEDULER_PLUGIN_PATH}")
endif()
