//===- compiler/driver/Link.cpp - model library linking -------------------===//
#include "compiler/driver/Link.h"

#include "compiler/codegen/HalideWriteGuard.h"
#include "compiler/driver/PlanEmitter.h"
#include "compiler/driver/TempDir.h"

#include "attn/library_digest.h"

#include "llvm/ADT/StringSet.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;

namespace attnc::driver {
namespace {

/// kGlueAmx: glue/amx.c, the AMX micro-kernel.
#include "compiler/driver/AmxGlue.inc"

class Linker {
public:
  Linker(MLIRContext *context, const Plan &plan, ArrayRef<uint8_t> constants,
         const LinkOptions &options)
      : loc(UnknownLoc::get(context)), plan(plan), constants(constants),
        options(options) {}

  LogicalResult run() {
    // What can be checked before any kernel compiles is checked first.
    if (failed(checkOutputPath()))
      return failure();
    llvm::ErrorOr<std::string> cc = findCompiler();
    if (!cc)
      return failure();
    if (std::error_code ec = tmp.create())
      return emitError(loc)
             << "cannot create a temporary directory: " << ec.message()
             << ": check TMPDIR";
    std::vector<std::string> inputs;
    codegen::HalideWriteGuard guard(tmp.path());
    if (failed(compileKernels(inputs)) || failed(writeSources(inputs)))
      return failure();
    return linkLibrary(*cc, inputs);
  }

private:
  /// -o names a file (not a directory) in a directory that exists and that
  /// this process may write.
  LogicalResult checkOutputPath() {
    const std::string &out = options.outputPath;
    if (fs::is_directory(out))
      return emitError(loc) << "cannot write '" << out
                            << "': it is a directory: give the library's "
                               "file name, such as '"
                            << out << "/model.so'";
    llvm::StringRef dir = path::parent_path(out);
    if (dir.empty())
      dir = ".";
    if (!fs::exists(dir))
      return emitError(loc) << "cannot write '" << out << "': directory '"
                            << dir << "' does not exist: create it first";
    if (!fs::is_directory(dir))
      return emitError(loc)
             << "cannot write '" << out << "': '" << dir
             << "' is not a directory: give -o a path in a directory";
    if (std::error_code ec = fs::access(dir, fs::AccessMode::Write))
      return emitError(loc)
             << "cannot write '" << out << "': directory '" << dir
             << "' is not writable (" << ec.message()
             << "): choose another -o, or change its permissions";
    return success();
  }

  LogicalResult compileKernels(std::vector<std::string> &objects) {
    // Progress on long compiles: with --verbose, or when a person watches.
    bool progress = options.verbose || llvm::errs().is_displayed();
    llvm::StringSet<> distinct;
    for (const PlanKernel &kernel : plan.kernels)
      if (kernel.op)
        distinct.insert(kernel.fnName);
    llvm::StringSet<> compiled;
    int64_t cached = 0;
    for (const PlanKernel &kernel : plan.kernels) {
      if (!kernel.op || !compiled.insert(kernel.fnName).second)
        continue;
      llvm::StringRef name = mlir::attn::KernelOp(kernel.op).getSymName();
      if (progress)
        llvm::errs() << "[" << compiled.size() << "/" << distinct.size()
                     << "] kernel " << name << "\n";
      codegen::CacheOutcome outcome;
      FailureOr<std::vector<std::string>> written = codegen::compileKernel(
          kernel.op,
          kernel.forInit
              ? options.target.withSchedule(schedules::ScheduleKind::Layout)
              : options.target,
          kernel.fnName, tmp.file(kernel.fnName + ".o"), options.cache,
          outcome);
      if (failed(written))
        return failure();
      cached += outcome.hit;
      reportCacheUse(outcome, ("kernel " + name).str());
      objects.insert(objects.end(), written->begin(), written->end());
    }
    if (options.verbose) {
      llvm::errs() << "attnc: compiled " << compiled.size()
                   << " distinct kernels for the model's "
                   << llvm::count_if(plan.kernels, [](const PlanKernel &k) {
                        return bool(k.op);
                      });
      if (options.cache.enabled())
        llvm::errs() << "; " << cached << " of them came from the cache in "
                     << options.cache.dir();
      llvm::errs() << "\n";
    }
    objects.push_back(tmp.file("halide_runtime.o"));
    std::string runtime = options.target.baseline().halide().to_string();
    codegen::CacheOutcome outcome;
    if (llvm::Error err = codegen::compileHalideRuntime(
            options.target, objects.back(), options.cache, outcome))
      return emitError(loc)
             << "cannot compile the Halide runtime for target '" << runtime
             << "': " << llvm::toString(std::move(err));
    if (options.verbose && options.cache.enabled())
      llvm::errs() << "attnc: Halide's runtime for " << runtime
                   << (outcome.hit ? " came from the cache\n"
                                   : " was compiled\n");
    reportCacheUse(outcome, "Halide's runtime");
    return success();
  }

  /// With --verbose: a damaged entry replaced, and (once) why nothing could
  /// be stored.
  void reportCacheUse(const codegen::CacheOutcome &outcome,
                      llvm::StringRef what) {
    if (!options.verbose)
      return;
    if (outcome.damaged)
      llvm::errs() << "attnc: the cache's entry for " << what
                   << " did not match its digest; compiled afresh and "
                      "replaced\n";
    if (!outcome.notStored.empty() && !reportedNotStored) {
      reportedNotStored = true;
      llvm::errs() << "attnc: cannot store compiled objects in the cache: "
                   << outcome.notStored
                   << " (set ATTNC_CACHE_DIR to a writable directory, or "
                      "pass --no-cache)\n";
    }
  }

  LogicalResult writeFile(llvm::StringRef file, llvm::StringRef contents) {
    std::error_code ec;
    llvm::raw_fd_ostream os(file, ec);
    if (!ec) {
      os << contents;
      os.close();
      ec = os.error();
      // Reported here; left set, the stream's destructor would abort.
      os.clear_error();
    }
    if (ec)
      return emitError(loc) << "cannot write '" << file << "': " << ec.message()
                            << ": check TMPDIR";
    return success();
  }

  /// plan.c, the version script and, when embedded, the constants object.
  LogicalResult writeSources(std::vector<std::string> &inputs) {
    PlanSourceInfo info{options.compilerVersion,
                        options.target.names(),
                        !constants.empty(),
                        options.target.baseline().storesHalfAsBits(),
                        codegen::modelDevice(options.target),
                        codegen::modelPrecision(options.target)};
    inputs.push_back(tmp.file("plan.c"));
    if (failed(writeFile(inputs.back(), emitPlanSource(plan, info))))
      return failure();
    if (options.target.usesAmxKernel()) {
      inputs.push_back(tmp.file("amx.c"));
      if (failed(writeFile(inputs.back(), kGlueAmx)))
        return failure();
    }
    exportsMap = tmp.file("exports.map");
    if (failed(writeFile(exportsMap,
                         "{\n  global: " ATTN_MODEL_ENTRY_SYMBOL ";\n"
                         "  local: *;\n};\n")))
      return failure();
    if (constants.empty())
      return success();
    std::string blob = tmp.file("constants.bin");
    if (failed(writeFile(blob, llvm::StringRef(reinterpret_cast<const char *>(
                                                   constants.data()),
                                               constants.size()))))
      return failure();
    // .incbin reads the blob at assembly time: no giant C array to parse.
    std::string asmSource;
    llvm::raw_string_ostream os(asmSource);
    os << "  .section .rodata." << kConstantsSymbol << ",\"a\",%progbits\n"
       << "  .balign 64\n"
       << "  .globl " << kConstantsSymbol << "\n"
       << "  .hidden " << kConstantsSymbol << "\n"
       << "  .type " << kConstantsSymbol << ", %object\n"
       << kConstantsSymbol << ":\n"
       << "  .incbin \"";
    os.write_escaped(blob);
    os << "\"\n"
       << "  .size " << kConstantsSymbol << ", . - " << kConstantsSymbol << "\n"
       << "  .section .note.GNU-stack,\"\",%progbits\n";
    inputs.push_back(tmp.file("constants.S"));
    return writeFile(inputs.back(), asmSource);
  }

  /// $ATTNC_CC if set (a cross or wrapped compiler, or a test's fake), else
  /// `cc` from PATH.
  llvm::ErrorOr<std::string> findCompiler() {
    if (std::optional<std::string> cc =
            llvm::sys::Process::GetEnv("ATTNC_CC")) {
      // A name with a slash comes back as it is, found or not.
      llvm::ErrorOr<std::string> found = llvm::sys::findProgramByName(*cc);
      if (found && !fs::can_execute(*found))
        found = std::make_error_code(std::errc::no_such_file_or_directory);
      if (!found)
        emitError(loc) << "ATTNC_CC is '" << *cc
                       << "', which is not a program: set it to the C "
                          "compiler that links model libraries, or unset it";
      return found;
    }
    llvm::ErrorOr<std::string> found = llvm::sys::findProgramByName("cc");
    if (!found)
      emitError(loc) << "cannot find the system C compiler 'cc' on PATH, "
                        "which links the model library: install gcc or clang";
    return found;
  }

  /// Where plan.c's headers are (attn/model_abi.h, HalideRuntime.h): beside
  /// an installed attnc (<prefix>/include, <prefix>/share/attnc/include),
  /// else in the source tree and Halide SDK it was built from.
  static std::vector<std::string> headerDirs() {
    static int anchor;
    std::string exe = fs::getMainExecutable(nullptr, &anchor);
    llvm::SmallString<128> prefix(path::parent_path(path::parent_path(exe)));
    llvm::SmallString<128> abi(prefix), halide(prefix);
    path::append(abi, "include");
    path::append(halide, "share", "attnc", "include");
    llvm::SmallString<128> probe(halide);
    path::append(probe, "HalideRuntime.h");
    if (!exe.empty() && fs::exists(probe))
      return {std::string(abi), std::string(halide)};
    return {ATTNC_ABI_INCLUDE_DIR, ATTNC_HALIDE_INCLUDE_DIR};
  }

  /// Appends attn/library_digest.h's trailer to the linked library, which
  /// the runtime verifies before it loads the library.
  LogicalResult appendDigest(llvm::StringRef library) {
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> bytes =
        llvm::MemoryBuffer::getFile(library, /*IsText=*/false,
                                    /*RequiresNullTerminator=*/false);
    if (!bytes)
      return emitError(loc) << "cannot read the linked library '" << library
                            << "': " << bytes.getError().message();
    llvm::StringRef data = (*bytes)->getBuffer();
    unsigned char trailer[::attn::digest::kTrailerSize];
    ::attn::digest::makeTrailer(data.bytes_begin(), data.size(), trailer);
    std::error_code ec;
    llvm::raw_fd_ostream os(library, ec, llvm::sys::fs::OF_Append);
    if (!ec) {
      os.write(reinterpret_cast<const char *>(trailer), sizeof trailer);
      os.close();
      ec = os.error();
    }
    if (ec)
      return emitError(loc) << "cannot write the digest of '" << library
                            << "': " << ec.message();
    return success();
  }

  /// Links into a unique name beside the output, then renames it over the
  /// output, so readers never see a partial library.
  LogicalResult linkLibrary(const std::string &cc,
                            const std::vector<std::string> &inputs) {
    llvm::SmallString<128> partial;
    fs::createUniquePath(options.outputPath + ".tmp-%%%%%%", partial,
                         /*MakeAbsolute=*/false);
    std::vector<std::string> args = {cc, "-shared", "-fPIC", "-O2",
                                     "-std=gnu11"};
    for (const std::string &dir : headerDirs())
      args.push_back("-I" + dir);
    args.push_back("-o");
    args.push_back(std::string(partial));
    args.insert(args.end(), inputs.begin(), inputs.end());
    for (const char *flag : {"-Wl,--no-undefined", "-Wl,-z,noexecstack",
                             "-lpthread", "-ldl", "-lm"})
      args.push_back(flag);
    args.push_back("-Wl,--version-script=" + exportsMap);

    std::string log = tmp.file("link.log");
    std::optional<llvm::StringRef> redirects[] = {
        llvm::StringRef(""), llvm::StringRef(log), llvm::StringRef(log)};
    std::vector<llvm::StringRef> argRefs(args.begin(), args.end());
    std::string execError;
    int rc = llvm::sys::ExecuteAndWait(cc, argRefs, std::nullopt, redirects,
                                       /*SecondsToWait=*/0, /*MemoryLimit=*/0,
                                       &execError);
    if (rc != 0) {
      fs::remove(partial);
      InFlightDiagnostic diag = emitError(loc)
                                << "linking the model library with '" << cc
                                << "' failed";
      if (rc < 0)
        return diag << ": " << execError;
      diag << " (exit code " << rc << ")";
      if (auto output = llvm::MemoryBuffer::getFile(log))
        diag << ":\n" << (*output)->getBuffer().rtrim();
      return diag;
    }
    if (failed(appendDigest(partial))) {
      fs::remove(partial);
      return failure();
    }
    if (std::error_code ec = fs::rename(partial, options.outputPath)) {
      fs::remove(partial);
      return emitError(loc)
             << "cannot write '" << options.outputPath << "': " << ec.message();
    }
    return success();
  }

  Location loc;
  const Plan &plan;
  ArrayRef<uint8_t> constants;
  const LinkOptions &options;
  TempDir tmp;
  std::string exportsMap;
  bool reportedNotStored = false;
};

} // namespace

LogicalResult linkModel(MLIRContext *context, const Plan &plan,
                        ArrayRef<uint8_t> constants,
                        const LinkOptions &options) {
  return Linker(context, plan, constants, options).run();
}

} // namespace attnc::driver
