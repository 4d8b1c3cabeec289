//===- fuzz/frontend_fuzzer.cpp - .attn text through MLIRGen and passes ---===//
//
// Any bytes as a .attn model. The contract attnc keeps: the frontend either
// rejects them with an `error:` diagnostic or checks a model; MLIRGen turns a
// checked model into IR that verifies, or reports an error; and the pass
// pipeline (as attnc runs it, with or without weight panels; models of up
// to kMaxOpsThroughPasses ops) either succeeds with verified IR or fails
// with an error diagnostic. A crash, a sanitizer
// report or a failure that says nothing is a finding.
//
//===----------------------------------------------------------------------===//

#include "fuzz/FuzzFiles.h"

#include "compiler/frontend/Frontend.h"
#include "compiler/frontend/MLIRGen.h"
#include "compiler/passes/Passes.h"
#include "dialects/attn/IR/AttnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>

using attnc::fuzz::finding;

namespace {

constexpr const char *kTarget = "frontend_fuzzer";

// The pass pipeline's cost grows with the ops (about 3.5 ms each in the asan
// build), its paths do not: a mutated `repeat 22` of a corpus seed becomes
// `repeat 62`, 4300 ops and 17 s through the passes, which took most of a
// CI run's fuzzing time for the corpus replay alone. Models of more ops
// than this stop after MLIRGen's verified IR; ~5 decoder layers of Llama's.
constexpr int64_t kMaxOpsThroughPasses = 300;

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::SourceMgr sourceMgr;
  unsigned bufferId = sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(
          llvm::StringRef(reinterpret_cast<const char *>(data), size),
          "fuzz.attn"),
      llvm::SMLoc());

  // A context per input, so no input sees types or attributes an earlier one
  // made (and memory does not grow with the run); no thread pool.
  mlir::DialectRegistry registry;
  registry.insert<mlir::attn::AttnDialect, mlir::func::FuncDialect>();
  mlir::MLIRContext context(registry, mlir::MLIRContext::Threading::DISABLED);
  context.loadAllAvailableDialects();
  bool reportedError = false;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    reportedError |= d.getSeverity() == mlir::DiagnosticSeverity::Error;
    return mlir::success();
  });

  std::string diags;
  llvm::raw_string_ostream diagOS(diags);
  attnc::BuiltinRegistry builtins = attnc::getBuiltinRegistry(context);
  std::unique_ptr<attnc::ModelAST> ast =
      attnc::loadModel(sourceMgr, bufferId, diagOS, builtins);
  if (!ast) {
    if (diags.find("error:") == std::string::npos)
      finding(kTarget, "the frontend rejected a model without an error");
    return 0;
  }
  mlir::OwningOpRef<mlir::ModuleOp> module =
      attnc::mlirGen(context, *ast, sourceMgr, builtins);
  if (!module) {
    if (!reportedError)
      finding(kTarget, "MLIRGen failed without an error");
    return 0;
  }
  if (mlir::failed(mlir::verify(*module))) {
    if (!reportedError)
      finding(kTarget, "MLIRGen's IR fails to verify without an error");
    return 0;
  }

  int64_t ops = 0;
  module->walk([&](mlir::Operation *) { ++ops; });
  if (ops > kMaxOpsThroughPasses)
    return 0;

  // The panel widths attnc uses: none (naive and auto schedules), NEON's,
  // AVX2's and AVX-512's (schedules::gemmPanelWidth). Which one follows
  // from the input, so a crash reproduces.
  static constexpr int64_t panelWidths[] = {0, 8, 16, 64};
  mlir::PassManager pm(&context);
  mlir::attn::buildAttnPipeline(pm, {panelWidths[size % 4], true});
  if (mlir::failed(pm.run(*module)) && !reportedError)
    finding(kTarget, "the pass pipeline failed without an error");
  return 0;
}
