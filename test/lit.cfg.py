# -*- Python -*-
# lit configuration for attnc: FileCheck tests of the frontend, every pass and
# the driver's errors. Run through ctest (test `lit`) or `lit build/test`.
import os

import lit.formats
from lit.llvm import llvm_config

config.name = "attnc"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".attn", ".test"]
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "e2e", "unit",
                   "conformance", "Inputs", "models", "fixtures"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.attnc_obj_root, "test")

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.attnc_tools_dir, append_path=True)
# FileCheck variables captured in one CHECK-LABEL block stay in it.
config.environment["FILECHECK_OPTS"] = "-enable-var-scope"
config.substitutions.append(("%models", os.path.join(config.attnc_src_root, "models")))
# `REQUIRES: autoscheduler`: cmake found the plugin behind --schedule=auto.
if getattr(config, "attnc_autoscheduler_plugin", ""):
    config.available_features.add("autoscheduler")
# `REQUIRES: opencl`: cmake found an OpenCL loader (CI: PoCL), so libraries
# built for host-opencl run here.
if getattr(config, "attnc_opencl_library", "").endswith(".so"):
    config.available_features.add("opencl")
# `UNSUPPORTED: asan`: the build is instrumented with ASan (CI's sanitizer job,
# docs/robustness.md), for the few tests whose cost there buys no coverage.
if "address" in getattr(config, "attnc_sanitize", "").split(";"):
    config.available_features.add("asan")
# `REQUIRES: cache-as`: this build's attnc shares the kernel cache entries of
# another attnc (ATTNC_CACHE_AS, the sanitizer builds), %cache-as-attnc.
if getattr(config, "attnc_cache_as", ""):
    config.available_features.add("cache-as")
    config.substitutions.append(("%cache-as-attnc", config.attnc_cache_as))
# `UNSUPPORTED: cuda-driver`: tests of a CUDA library on a machine without
# the CUDA driver.
try:
    import ctypes
    ctypes.CDLL("libcuda.so.1")
    config.available_features.add("cuda-driver")
except OSError:
    pass
