//===- dialects/attn/IR/AttnDialect.cpp - attn dialect --------------------===//
#include "dialects/attn/IR/AttnDialect.h"
#include "dialects/attn/IR/AttnOps.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::attn;

#include "dialects/attn/IR/AttnEnums.cpp.inc"
#include "dialects/attn/IR/AttnOpsDialect.cpp.inc"

using llvm::function_ref;
#define GET_ATTRDEF_CLASSES
#include "dialects/attn/IR/AttnAttrs.cpp.inc"

//===----------------------------------------------------------------------===//
// MaskAttr
//===----------------------------------------------------------------------===//

LogicalResult MaskAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               bool causal, int64_t offset, int64_t windowLeft,
                               int64_t windowRight, bool alibi) {
  if (windowLeft < -1 || windowRight < -1)
    return emitError() << "window sides must be >= 0, or -1 for unbounded";
  return success();
}

/// `mask<term, term ...>`: none, causal, window(L, R) with `*` for an
/// unbounded side, offset(N), alibi.
Attribute MaskAttr::parse(AsmParser &parser, Type) {
  bool causal = false, alibi = false;
  int64_t offset = 0, left = -1, right = -1;
  auto parseSide = [&](int64_t &side) -> ParseResult {
    if (succeeded(parser.parseOptionalStar())) {
      side = -1;
      return success();
    }
    return parser.parseInteger(side);
  };
  if (parser.parseLess())
    return {};
  do {
    StringRef term;
    SMLoc at = parser.getCurrentLocation();
    if (parser.parseKeyword(&term))
      return {};
    if (term == "none")
      continue;
    if (term == "causal") {
      causal = true;
    } else if (term == "alibi") {
      alibi = true;
    } else if (term == "window") {
      if (parser.parseLParen() || parseSide(left) || parser.parseComma() ||
          parseSide(right) || parser.parseRParen())
        return {};
    } else if (term == "offset") {
      if (parser.parseLParen() || parser.parseInteger(offset) ||
          parser.parseRParen())
        return {};
    } else {
      parser.emitError(at, "unknown mask term '")
          << term
          << "'; the terms are none, causal, window(L, R), offset(N), alibi";
      return {};
    }
  } while (succeeded(parser.parseOptionalComma()));
  if (parser.parseGreater())
    return {};
  return parser.getChecked<MaskAttr>(parser.getContext(), causal, offset, left,
                                     right, alibi);
}

void MaskAttr::print(AsmPrinter &printer) const {
  SmallVector<std::string, 3> terms;
  if (getCausal())
    terms.push_back("causal");
  auto side = [](int64_t s) {
    return s < 0 ? std::string("*") : std::to_string(s);
  };
  if (hasWindow())
    terms.push_back("window(" + side(getWindowLeft()) + ", " +
                    side(getWindowRight()) + ")");
  if (getOffset() != 0)
    terms.push_back("offset(" + std::to_string(getOffset()) + ")");
  if (getAlibi())
    terms.push_back("alibi");
  if (terms.empty())
    terms.push_back("none");
  printer << "<";
  llvm::interleave(terms, printer, ", ");
  printer << ">";
}

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
