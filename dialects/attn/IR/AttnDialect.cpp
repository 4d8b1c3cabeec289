//===- dialects/attn/IR/AttnDialect.cpp - attn dialect --------------------===//
#include "dialects/attn/IR/AttnDialect.h"
#include "dialects/attn/IR/AttnOps.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::attn;

#include "dialects/attn/IR/AttnOpsDialect.cpp.inc"
#include "dialects/attn/IR/AttnEnums.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "dialects/attn/IR/AttnAttrs.cpp.inc"

void AttnDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/attn/IR/AttnOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/attn/IR/AttnAttrs.cpp.inc"
      >();
}
