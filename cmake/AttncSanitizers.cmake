#===- cmake/AttncSanitizers.cmake - ASan/UBSan, TSan and libFuzzer builds ---===#
#
# ATTNC_SANITIZE instruments everything this project compiles (the compiler,
# the runtime, the tools and tests; not Debian's LLVM/MLIR nor the Halide
# wheel):
#   address;undefined   ASan + UBSan; any report aborts the test that hit it
#   thread              TSan
# ATTNC_FUZZ=ON builds the libFuzzer targets of fuzz/ (needs clang; every
# other target is then built with -fsanitize=fuzzer-no-link, so the fuzzers
# see the coverage of the code they call).
# CMakePresets.json names the two configurations CI builds (asan, tsan).

set(ATTNC_SANITIZE "" CACHE STRING
    "Sanitizers to build with: 'address;undefined', 'thread' or empty")
option(ATTNC_FUZZ "Build the libFuzzer targets in fuzz/ (clang only)" OFF)

set(attnc_sanitize_flags "")
if(ATTNC_SANITIZE)
  foreach(s IN LISTS ATTNC_SANITIZE)
    if(NOT s MATCHES "^(address|undefined|thread)$")
      message(FATAL_ERROR "ATTNC_SANITIZE: unknown sanitizer '${s}'; "
                          "use 'address;undefined' or 'thread'")
    endif()
  endforeach()
  if("thread" IN_LIST ATTNC_SANITIZE AND "address" IN_LIST ATTNC_SANITIZE)
    message(FATAL_ERROR "ATTNC_SANITIZE: ASan and TSan cannot share a build")
  endif()
  list(JOIN ATTNC_SANITIZE "," attnc_sanitizers)
  # vptr checks need RTTI, which Debian's LLVM is built without; a report
  # must fail its test, not scroll past.
  list(APPEND attnc_sanitize_flags -fsanitize=${attnc_sanitizers}
       -fno-sanitize=vptr -fno-sanitize-recover=all -fno-omit-frame-pointer
       -gline-tables-only)
endif()

if(ATTNC_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "ATTNC_FUZZ needs clang (libFuzzer): configure with "
                        "-DCMAKE_CXX_COMPILER=clang++-19 "
                        "-DCMAKE_C_COMPILER=clang-19, or the asan preset")
  endif()
  list(APPEND attnc_sanitize_flags -fsanitize=fuzzer-no-link)
endif()

add_compile_options(${attnc_sanitize_flags})
add_link_options(${attnc_sanitize_flags})

# Under ASan, every executable the build made (call after the last
# add_subdirectory) gets cmake/AttncAsanOptions.c: its default options.
function(attnc_add_asan_options)
  if(NOT "address" IN_LIST ATTNC_SANITIZE)
    return()
  endif()
  set(dirs ${PROJECT_SOURCE_DIR})
  while(dirs)
    list(POP_FRONT dirs dir)
    get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
    list(APPEND dirs ${subdirs})
    get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
    foreach(t IN LISTS targets)
      get_target_property(type ${t} TYPE)
      if(type STREQUAL "EXECUTABLE")
        target_sources(${t} PRIVATE
                       ${PROJECT_SOURCE_DIR}/cmake/AttncAsanOptions.c)
      endif()
    endforeach()
  endwhile()
endfunction()
