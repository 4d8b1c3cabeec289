//===- tools/attnc/attnc.cpp - the attnc compiler driver ------------------===//
//
// attnc model.attn -o model.so                 (weights read at load)
// attnc model.attn --weights w.safetensors -o model.so   (weights embedded)
// attnc import DIR -o model.attn               (a Hugging Face directory)
// attnc DIR -o model.so                        (import, then compile)
// attnc quantize IN.safetensors -o OUT.safetensors [--only RE] [--in-out RE]
//              [--bits 4 [--group 32]]         (int8 or 4-bit linear weights)
//
// Loads a model (.attn through the frontend, .mlir as attn-dialect IR, or a
// Hugging Face model directory through compiler/import),
// runs the attn pipeline and links one shared library; --emit stops earlier
// and prints that stage: ast, mlir, mlir-opt, kernels, halide-stmt,
// device-code. Every error is `file:line:col: error:` with the source line
// when it has a place in the input, `attnc: error:` otherwise, and exit 1.
//
//===----------------------------------------------------------------------===//
#include "attn/model_abi.h"
#include "compiler/codegen/KernelCodegen.h"
#include "compiler/driver/Driver.h"
#include "compiler/driver/InitWeights.h"
#include "compiler/driver/Quantize.h"
#include "compiler/frontend/Frontend.h"
#include "compiler/frontend/MLIRGen.h"
#include "compiler/import/Importer.h"
#include "compiler/passes/Passes.h"
#include "dialects/attn/IR/AttnDialect.h"
#include "dialects/attn/IR/AttnOps.h"
#include "tools/common/OptionSuggest.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

#include <csignal>

using namespace mlir;
namespace cl = llvm::cl;

namespace {

/// The stages attnc can stop after, in order (a Toy-style ladder).
enum class Emit {
  Attn,
  AST,
  MLIR,
  MLIROpt,
  Kernels,
  HalideStmt,
  DeviceCode,
  Lib
};

cl::OptionCategory attncCategory("attnc options");

/// An enum option parser whose error lists the accepted values, e.g.
/// "unknown value 'bogus': use hand, auto or naive".
template <typename T> struct ListingParser : cl::parser<T> {
  using cl::parser<T>::parser;
  bool parse(cl::Option &option, llvm::StringRef argName, llvm::StringRef arg,
             T &value) {
    std::string names;
    for (size_t i = 0, e = this->Values.size(); i != e; ++i) {
      if (this->Values[i].Name == arg) {
        value = this->Values[i].V.getValue();
        return false;
      }
      names += (i == 0 ? "" : i + 1 == e ? " or " : ", ");
      names += this->Values[i].Name.str();
    }
    return option.error("unknown value '" + arg + "': use " + names);
  }
};

cl::opt<std::string> inputPath(cl::Positional, cl::Required,
                               cl::desc("<model.attn | model.mlir | DIR>"),
                               cl::cat(attncCategory));
cl::opt<std::string> outputPath("o",
                                cl::desc("Output file (IR: default stdout)"),
                                cl::value_desc("lib.so"),
                                cl::cat(attncCategory));
cl::opt<std::string>
    weightsPath("weights",
                cl::desc("Embed these weights in the library, a safetensors "
                         "file or a sharded checkpoint's "
                         "model.safetensors.index.json (default: the "
                         "library reads them at load, attn-run --weights)"),
                cl::value_desc("file.safetensors"), cl::cat(attncCategory));
cl::opt<std::string>
    targetName("target", cl::init("host"),
               cl::desc("'host', a Halide target string such as "
                        "x86-64-linux-avx2, a comma-separated list of them "
                        "(most capable first), x86-64-multi (AVX-512 "
                        "and AVX2 variants of every kernel), host-cuda "
                        "(e.g. host-cuda-cuda_capability_80) or "
                        "host-opencl"),
               cl::cat(attncCategory));
const std::string autoScheduleHelp =
    std::string("Halide's ") + attnc::codegen::autoschedulerName() +
    " autoscheduler: a reference for the hand schedules";
cl::opt<attnc::codegen::ScheduleKind, false,
        ListingParser<attnc::codegen::ScheduleKind>>
    schedule("schedule", cl::desc("Kernel schedules"),
             cl::values(clEnumValN(attnc::codegen::ScheduleKind::Hand, "hand",
                                   "tuned per target (default)"),
                        clEnumValN(attnc::codegen::ScheduleKind::Auto, "auto",
                                   autoScheduleHelp.c_str()),
                        clEnumValN(attnc::codegen::ScheduleKind::Naive, "naive",
                                   "everything at root, serial: a baseline")),
             cl::init(attnc::codegen::ScheduleKind::Hand),
             cl::cat(attncCategory));
cl::opt<std::string> precision(
    "precision",
    cl::desc("What the linears' GEMMs multiply: 'f32' (default), 'bf16' "
             "(inputs rounded to bf16, bf16 weights, f32 sums; needs "
             "AVX512_BF16) or 'int8' (linears with i8 or 4-bit weights "
             "quantize their input rows to int8, a scale per block of 32, "
             "and sum integer products)"),
    cl::value_desc("f32|bf16|int8"), cl::init("f32"), cl::cat(attncCategory));
cl::opt<Emit, false, ListingParser<Emit>> emit(
    "emit", cl::desc("What to produce"),
    cl::values(clEnumValN(Emit::Attn, "attn",
                          "the .attn source imported from a Hugging Face "
                          "directory (as attnc import)"),
               clEnumValN(Emit::AST, "ast",
                          "the checked syntax tree (.attn input)"),
               clEnumValN(Emit::MLIR, "mlir", "attn IR from the frontend"),
               clEnumValN(Emit::MLIROpt, "mlir-opt",
                          "attn IR after the optimising passes"),
               clEnumValN(Emit::Kernels, "kernels",
                          "attn IR grouped into attn.kernel regions"),
               clEnumValN(Emit::HalideStmt, "halide-stmt",
                          "Halide's lowered statement of each distinct kernel"),
               clEnumValN(Emit::DeviceCode, "device-code",
                          "the GPU code of each distinct kernel (PTX or "
                          "OpenCL C)"),
               clEnumValN(Emit::Lib, "lib", "the model library (default)")),
    cl::init(Emit::Lib), cl::cat(attncCategory));
cl::opt<std::string> initWeights(
    "init-weights",
    cl::desc("Write deterministic random weights for the model and exit"),
    cl::value_desc("out.safetensors"), cl::cat(attncCategory));
cl::opt<bool> verbose("verbose", cl::desc("Report what was compiled on stderr"),
                      cl::cat(attncCategory));
cl::alias verboseShort("v", cl::aliasopt(verbose),
                       cl::desc("Alias for --verbose"), cl::cat(attncCategory));
cl::opt<bool> noCache(
    "no-cache",
    cl::desc("Compile every kernel and Halide's runtime afresh and keep "
             "nothing (by default compiled objects are kept in "
             "$ATTNC_CACHE_DIR, else ~/.cache/attnc, and reused)"),
    cl::cat(attncCategory));
cl::opt<uint64_t> seed("seed", cl::init(0),
                       cl::desc("Seed of --init-weights (default 0)"),
                       cl::cat(attncCategory));
cl::opt<int64_t> maxContext(
    "max-context",
    cl::desc("Import: the longest sequence and KV cache (default: the "
             "config's max_position_embeddings, at most 4096)"),
    cl::value_desc("N"), cl::init(0), cl::cat(attncCategory));
cl::opt<std::string>
    head("head",
         cl::desc("Import: what the model outputs, 'logits' or 'hidden' "
                  "(the final normed hidden state; decoders: default "
                  "logits, encoders: hidden only)"),
         cl::value_desc("logits|hidden"), cl::cat(attncCategory));
cl::opt<std::string>
    kvCache("kv-cache",
            cl::desc("Import: the element type of a decoder's KV caches, "
                     "'f32' (default), 'f16' or 'bf16' (half the bytes a "
                     "decode step reads; keys and values are rounded to it) "
                     "or 'i8' (a quarter, with a scale per row and head; "
                     "decoders only)"),
            cl::value_desc("f32|f16|bf16|i8"), cl::init("f32"),
            cl::cat(attncCategory));

cl::opt<std::string> quantizeOnly(
    "only",
    cl::desc("Quantize: the tensors to quantize, a regex matched anywhere in "
             "the name (default: every 2-D F32, BF16 and F16 tensor)"),
    cl::value_desc("regex"), cl::cat(attncCategory));
cl::opt<std::string> quantizeInOut(
    "in-out",
    cl::desc("Quantize: the tensors stored [in, out] (GPT-2's Conv1D, "
             "declared layout(in, out)), scaled per column"),
    cl::value_desc("regex"), cl::cat(attncCategory));
cl::opt<int> quantizeBits(
    "bits",
    cl::desc("Quantize: 8 (int8, a scale per output channel; the default) or "
             "4 (4-bit, a scale per group of inputs, two values per byte)"),
    cl::init(8), cl::cat(attncCategory));
cl::opt<int64_t> quantizeGroup(
    "group",
    cl::desc("Quantize --bits 4: inputs per scale (default 32); it must "
             "divide each matrix's inputs"),
    cl::init(32), cl::cat(attncCategory));

/// `attnc import DIR`: the first argument was `import`.
bool importCommand = false;
/// `attnc quantize IN -o OUT`: the first argument was `quantize`.
bool quantizeCommand = false;

int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "attnc") << message << "\n";
  return 1;
}

/// Opens -o, or stdout without it.
std::unique_ptr<llvm::ToolOutputFile> openOutput() {
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> out =
      openOutputFile(outputPath.empty() ? "-" : outputPath.getValue(), &error);
  if (!out)
    fail(error);
  return out;
}

/// Whether the input is a Hugging Face model directory; a directory named
/// like a model file is a mistake the file reader reports.
bool isModelDirectory() {
  llvm::StringRef path = inputPath;
  return llvm::sys::fs::is_directory(path) && !path.ends_with(".attn") &&
         !path.ends_with(".mlir");
}

/// The .attn source of the Hugging Face directory `inputPath`, after
/// printing the importer's notes; nullopt after printing its errors.
std::optional<std::string> importDirectory() {
  attnc::import::ImportOptions options;
  options.maxContext = maxContext;
  options.head = head;
  options.kvCache = kvCache;
  llvm::Expected<attnc::import::ImportResult> result =
      attnc::import::importDirectory(inputPath, options);
  if (!result) {
    llvm::handleAllErrors(result.takeError(), [](const llvm::ErrorInfoBase &e) {
      fail(e.message());
    });
    return std::nullopt;
  }
  for (const std::string &note : result->notes)
    llvm::WithColor::note(llvm::errs(), "attnc") << note << "\n";
  return std::move(result->source);
}

/// Parses and checks a .attn model, or the source imported from a Hugging
/// Face directory (the frontend prints its own errors, naming
/// `DIR/<imported>.attn`, whose lines `attnc import` prints), and builds its
/// attn IR; with --emit=ast, prints the checked tree instead.
OwningOpRef<ModuleOp> importAttnModel(MLIRContext &context,
                                      llvm::SourceMgr &sourceMgr,
                                      bool &printedAST) {
  attnc::BuiltinRegistry builtins = attnc::getBuiltinRegistry(context);
  std::unique_ptr<attnc::ModelAST> ast;
  if (isModelDirectory()) {
    std::optional<std::string> source = importDirectory();
    if (!source)
      return nullptr;
    unsigned bufferId = sourceMgr.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBufferCopy(*source,
                                             inputPath + "/<imported>.attn"),
        llvm::SMLoc());
    ast = attnc::loadModel(sourceMgr, bufferId, llvm::errs(), builtins);
  } else {
    ast = attnc::loadModelFile(inputPath, sourceMgr, llvm::errs(), builtins);
  }
  if (!ast)
    return nullptr;
  if (emit == Emit::AST && initWeights.empty()) {
    if (std::unique_ptr<llvm::ToolOutputFile> out = openOutput()) {
      attnc::dumpModel(*ast, out->os());
      out->keep();
      printedAST = true;
    }
    return nullptr;
  }
  return attnc::mlirGen(context, *ast, sourceMgr, builtins);
}

OwningOpRef<ModuleOp> loadInput(MLIRContext &context,
                                llvm::SourceMgr &sourceMgr, bool &printedAST) {
  if (isModelDirectory() || !llvm::StringRef(inputPath).ends_with(".mlir"))
    return importAttnModel(context, sourceMgr, printedAST);
  if (emit == Emit::AST) {
    fail("--emit=ast needs a .attn model; '" + inputPath +
         "' is attn IR already");
    return nullptr;
  }
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(inputPath, /*IsText=*/true);
  if (std::error_code ec = buffer.getError()) {
    fail("cannot read '" + inputPath + "': " + ec.message());
    return nullptr;
  }
  sourceMgr.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
  return parseSourceFile<ModuleOp>(sourceMgr, &context);
}

/// Prints `module` to -o, or stdout without it.
int printModule(ModuleOp module) {
  std::unique_ptr<llvm::ToolOutputFile> out = openOutput();
  if (!out)
    return 1;
  module.print(out->os());
  out->os() << "\n";
  out->keep();
  return 0;
}

/// Prints `what` (Halide's lowered statement or the GPU code) of each
/// distinct kernel of the module's entries (run, and prefill and decode
/// where the model has states), naming the kernels that share it.
int printKernelTexts(ModuleOp module,
                     const attnc::schedules::BuildTarget &target,
                     attnc::codegen::KernelText what) {
  llvm::StringMap<unsigned> indexOf;
  std::vector<SmallVector<attn::KernelOp>> distinct;
  module.walk([&](attn::KernelOp k) {
    auto [it, inserted] =
        indexOf.try_emplace(k.getStructuralKey(), distinct.size());
    if (inserted)
      distinct.emplace_back();
    distinct[it->second].push_back(k);
  });
  std::unique_ptr<llvm::ToolOutputFile> out = openOutput();
  if (!out)
    return 1;
  for (SmallVector<attn::KernelOp> &kernels : distinct) {
    llvm::SmallString<128> stmt;
    if (std::error_code ec =
            llvm::sys::fs::createTemporaryFile("attnc", "stmt", stmt))
      return fail("cannot create a temporary file: " + ec.message());
    llvm::FileRemover remover(stmt);
    if (failed(attnc::codegen::emitKernelText(kernels.front(), target, what,
                                              stmt)))
      return 1;
    auto text = llvm::MemoryBuffer::getFile(stmt);
    if (!text)
      return fail("cannot read Halide's output: " + text.getError().message());
    out->os() << "// kernel @" << kernels.front().getSymName();
    for (attn::KernelOp same : llvm::drop_begin(kernels))
      out->os() << ", @" << same.getSymName();
    out->os() << "\n" << (*text)->getBuffer() << "\n";
  }
  out->keep();
  return 0;
}

/// `attnc import DIR` and `attnc DIR --emit=attn`: prints the source.
int runImport() {
  if (!isModelDirectory())
    return fail((importCommand ? "attnc import" : "--emit=attn") +
                llvm::Twine(" needs a Hugging Face model directory; '") +
                inputPath + "' is not a directory");
  for (cl::Option *option : std::initializer_list<cl::Option *>{
           &weightsPath, &initWeights, &targetName, &schedule, &precision})
    if (option->getNumOccurrences())
      return fail("--" + option->ArgStr +
                  " applies to a compile; the import writes .attn source");
  if (importCommand && emit.getNumOccurrences() && emit != Emit::Attn)
    return fail("attnc import writes .attn source; for another --emit, "
                "give the directory to attnc itself: attnc DIR --emit=...");
  std::optional<std::string> source = importDirectory();
  if (!source)
    return 1;
  std::unique_ptr<llvm::ToolOutputFile> out = openOutput();
  if (!out)
    return 1;
  out->os() << *source;
  out->keep();
  return 0;
}

/// `attnc quantize IN -o OUT`: symmetric per-output-channel int8, or 4-bit
/// per group of inputs, of the chosen matrices (compiler/driver/Quantize.h).
int runQuantize() {
  if (outputPath.empty())
    return fail("no output file: give -o <out.safetensors>");
  for (cl::Option *option : std::initializer_list<cl::Option *>{
           &weightsPath, &initWeights, &targetName, &schedule, &precision,
           &emit, &maxContext, &head, &kvCache})
    if (option->getNumOccurrences())
      return fail("--" + option->ArgStr +
                  " applies to a compile or an import, not to attnc quantize");
  if (quantizeGroup.getNumOccurrences() && quantizeBits != 4)
    return fail("--group applies to --bits 4 (int8 has one scale per output "
                "channel)");
  attnc::driver::QuantizeOptions options{quantizeOnly, quantizeInOut,
                                         quantizeBits, quantizeGroup};
  llvm::Expected<attnc::driver::QuantizeReport> report =
      attnc::driver::quantizeCheckpoint(inputPath, outputPath, options);
  if (!report)
    return fail(llvm::toString(report.takeError()));
  if (verbose)
    llvm::errs() << "attnc: quantized " << report->quantized.size()
                 << " tensors to " << (quantizeBits == 4 ? "4 bits" : "int8")
                 << "; " << report->bytesBefore << " -> " << report->bytesAfter
                 << " bytes\n";
  return 0;
}

int run() {
  if (quantizeCommand)
    return runQuantize();
  for (cl::Option *option : std::initializer_list<cl::Option *>{
           &quantizeOnly, &quantizeInOut, &quantizeBits, &quantizeGroup})
    if (option->getNumOccurrences())
      return fail("--" + option->ArgStr + " applies to attnc quantize");
  if (maxContext.getNumOccurrences() && maxContext <= 0)
    return fail("--max-context must be a positive number of tokens");
  if (kvCache != "f32" && kvCache != "f16" && kvCache != "bf16" &&
      kvCache != "i8")
    return fail("--kv-cache is '" + kvCache +
                "', but a KV cache is f32, f16, bf16 or i8");
  if (importCommand || emit == Emit::Attn)
    return runImport();
  for (cl::Option *option :
       std::initializer_list<cl::Option *>{&maxContext, &head, &kvCache})
    if (option->getNumOccurrences() && !isModelDirectory())
      return fail("--" + option->ArgStr +
                  " applies to a Hugging Face model directory; '" + inputPath +
                  "' is a model already");
  std::optional<attnc::schedules::Precision> gemmPrecision =
      attnc::schedules::parsePrecision(precision);
  if (!gemmPrecision) {
    std::string names;
    const std::vector<attnc::schedules::Precision> &all =
        attnc::schedules::allPrecisions();
    for (size_t i = 0; i < all.size(); ++i)
      names += std::string(i == 0                ? ""
                           : i + 1 == all.size() ? " or "
                                                 : ", ") +
               attnc::schedules::precisionName(all[i]);
    return fail("--precision is '" + precision +
                "', but the linears compute in " + names);
  }
  llvm::Expected<attnc::schedules::BuildTarget> target =
      attnc::codegen::parseTarget(targetName, schedule);
  if (!target)
    return fail(llvm::toString(target.takeError()));
  *target = target->withPrecision(*gemmPrecision);
  DialectRegistry registry;
  registry.insert<attn::AttnDialect, func::FuncDialect>();
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // Users read errors against their model, not against generic-form IR.
  context.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler sourceHandler(sourceMgr, &context);
  // Registered last, so it sees each diagnostic first: those without a
  // place in the input (files, tools) read as the tool's own errors.
  ScopedDiagnosticHandler toolHandler(&context, [](Diagnostic &diag) {
    if (!isa<UnknownLoc>(diag.getLocation()))
      return failure();
    llvm::WithColor::error(llvm::errs(), "attnc") << diag.str() << "\n";
    for (Diagnostic &note : diag.getNotes())
      llvm::WithColor::note(llvm::errs(), "attnc") << note.str() << "\n";
    return success();
  });

  bool printedAST = false;
  OwningOpRef<ModuleOp> module = loadInput(context, sourceMgr, printedAST);
  if (printedAST)
    return 0;
  if (!module || failed(verify(*module)))
    return 1;
  if (emit == Emit::MLIR && initWeights.empty())
    return printModule(*module);

  FailureOr<func::FuncOp> model = attnc::driver::getModelFunction(*module);
  if (failed(model))
    return 1;
  if (!initWeights.empty())
    return failed(attnc::driver::writeRandomWeights(*model, initWeights, seed));
  // The model's own errors come first; then what the command line lacks.
  bool buildingLib = emit == Emit::Lib;
  if (buildingLib && outputPath.empty())
    return fail("no output file: give -o <lib.so>");

  if (llvm::Error error = attnc::codegen::checkSchedule(*target))
    return fail(llvm::toString(std::move(error)));
  if (llvm::Error error = attnc::codegen::checkPrecision(*target))
    return fail(llvm::toString(std::move(error)));
  PassManager pm(&context);
  attn::buildAttnPipeline(
      pm, {target->weightPanelWidth(),
           /*formKernels=*/emit != Emit::MLIROpt,
           target->precision() == attnc::schedules::Precision::BF16,
           target->precision() == attnc::schedules::Precision::Int8,
           target->int8PanelWidth()});
  if (failed(pm.run(*module)))
    return 1;
  if (emit == Emit::MLIROpt || emit == Emit::Kernels)
    return printModule(*module);
  if (emit == Emit::HalideStmt)
    return printKernelTexts(*module, *target, attnc::codegen::KernelText::Stmt);
  if (emit == Emit::DeviceCode) {
    if (attnc::codegen::modelDevice(*target) == ATTN_MODEL_DEVICE_HOST)
      return fail("--emit=device-code needs a GPU target (--target=host-cuda "
                  "or host-opencl); '" +
                  target->baseline().halide().to_string() +
                  "' runs on the CPU");
    return printKernelTexts(*module, *target,
                            attnc::codegen::KernelText::DeviceCode);
  }

  attnc::driver::CompileOptions options(*target);
  options.weightsPath = weightsPath;
  options.outputPath = outputPath;
  options.defaultModelName = llvm::sys::path::stem(inputPath).str();
  options.verbose = verbose;
  if (!noCache)
    options.cache = attnc::codegen::ObjectCache::fromEnvironment();
  return failed(attnc::driver::compileModel(*module, options));
}

/// The first argument that names no option, as llvm::cl reads them ("-o
/// FILE", "--emit=mlir", "-emit mlir"), or "" when all do.
llvm::StringRef unknownOption(int argc, char **argv) {
  llvm::StringMap<cl::Option *> &options = cl::getRegisteredOptions();
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg = argv[i];
    if (arg == "--")
      break;
    if (!arg.starts_with("-") || arg == "-")
      continue;
    llvm::StringRef name =
        arg.drop_front(arg.starts_with("--") ? 2 : 1).split('=').first;
    auto it = options.find(name);
    if (it == options.end())
      return arg;
    if (!arg.contains('=') &&
        it->second->getValueExpectedFlag() == cl::ValueRequired)
      ++i; // its value, which may start with '-'
  }
  return "";
}

/// Parses the command line; on an unknown option, says so in one line with
/// a suggestion only when an option is close (tools/common/OptionSuggest.h)
/// instead of llvm::cl's nearest option however far.
bool parseCommandLine(int argc, char **argv) {
  std::string errors;
  llvm::raw_string_ostream errorStream(errors);
  if (cl::ParseCommandLineOptions(
          argc, argv, "attnc: attention models to shared libraries\n",
          &errorStream))
    return true;
  llvm::StringRef unknown = unknownOption(argc, argv);
  if (unknown.empty()) {
    llvm::errs() << errors;
    return false;
  }
  std::vector<std::string> visible;
  for (auto &entry : cl::getRegisteredOptions())
    if (entry.getValue()->getOptionHiddenFlag() == cl::NotHidden)
      visible.push_back(entry.getKey().str());
  llvm::sort(visible); // the map's order is its hash's
  std::string closest =
      attnc::tools::closestOption(unknown.ltrim('-').split('=').first, visible);
  if (!closest.empty())
    closest.insert(0, closest.size() == 1 ? "-" : "--");
  fail(attnc::tools::unknownOptionMessage("attnc", unknown, closest));
  return false;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // A file size limit (ulimit -f) then fails a write as a full disk does,
  // with an error naming the file, instead of a signal LLVM reports as a
  // crash.
  std::signal(SIGXFSZ, SIG_IGN);
  cl::HideUnrelatedOptions(attncCategory);
  cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << attnc::driver::getVersionString() << "\n";
  });
  // `attnc import DIR ...` is `attnc DIR --emit=attn ...` with its own name.
  std::vector<char *> args(argv, argv + argc);
  if (args.size() > 1 && llvm::StringRef(args[1]) == "import") {
    importCommand = true;
    args.erase(args.begin() + 1);
  } else if (args.size() > 1 && llvm::StringRef(args[1]) == "quantize") {
    quantizeCommand = true;
    args.erase(args.begin() + 1);
  }
  if (!parseCommandLine(args.size(), args.data()))
    return 1;
  return run();
}
