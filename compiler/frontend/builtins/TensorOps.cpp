//===- compiler/frontend/builtins/TensorOps.cpp - layout and reductions ---===//
//
// Part of attnc. The tensor builtins of activations: `slice`, `concat`,
// `transpose`, `reshape` (attn.slice, attn.concat, attn.transpose and
// attn.reshape, the ops weight expressions use too) and the reductions `sum`
// and `mean` (attn.reduce), which drop the dim they reduce, as torch's
// default keepdim=False.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/Builtins.h"
#include "compiler/frontend/EmitContext.h"

#include "dialects/attn/IR/AttnOps.h"

using namespace attnc;

/// The index in `x`'s shape of the dim `arg` names: a declared dim that
/// occurs once in the shape, or an index (negative from the end, -1 the
/// last, as in PyTorch); nullopt after an error.
static std::optional<size_t> resolveDim(CheckContext &ctx, const Expr &arg,
                                        const Expr &x,
                                        llvm::StringRef builtin) {
  int64_t rank = int64_t(x.shape.size());
  if (const auto *number = llvm::dyn_cast<NumberExpr>(&arg);
      number && number->isInteger) {
    int64_t index = number->intValue;
    if (index >= -rank && index < rank)
      return size_t(index < 0 ? index + rank : index);
    ctx.errorAt(arg, "dim " + llvm::Twine(index) + " of '" + builtin +
                         "' is outside the rank " + llvm::Twine(rank) + " of " +
                         shapeToString(x.shape) + ": use 0 .. " +
                         llvm::Twine(rank - 1) + " or -" + llvm::Twine(rank) +
                         " .. -1");
    return std::nullopt;
  }
  const auto *name = llvm::dyn_cast<NameExpr>(&arg);
  if (!name) {
    ctx.errorAt(arg, "a dim of '" + builtin +
                         "' must be a declared dim, such as 'S', or a dim's "
                         "index, such as -1 for the last");
    return std::nullopt;
  }
  DimDecl *dim = ctx.getDim(name->name);
  if (!dim) {
    ctx.errorAt(arg,
                "unknown dim '" + name->name + "' in '" + builtin + "'" +
                    didYouMean(closestName(name->name, ctx.getDims().keys())));
    return std::nullopt;
  }
  std::optional<size_t> found;
  for (auto [d, extent] : llvm::enumerate(x.shape)) {
    if (extent.dim != dim)
      continue;
    if (found) {
      ctx.errorAt(arg, "'" + dim->name + "' occurs more than once in " +
                           shapeToString(x.shape) + "; give the dim of '" +
                           builtin + "' by its index, such as " +
                           llvm::Twine(d));
      return std::nullopt;
    }
    found = d;
  }
  if (!found)
    ctx.errorAt(arg, "'" + dim->name + "' is not a dim of " +
                         shapeToString(x.shape) + " in '" + builtin +
                         "'; a fixed dim is given by its index, such as -1");
  return found;
}

/// Whether `e` is computed from weights alone (a weight, or a layout
/// builtin of such), which the driver computes once at load.
bool attnc::isWeightExpression(const Expr &e) {
  const auto *call = llvm::dyn_cast<BuiltinExpr>(&e);
  if (!call)
    return false;
  if (call->builtin == "weight")
    return true;
  if (!llvm::is_contained({"slice", "concat", "transpose", "reshape"},
                          call->builtin))
    return false;
  return llvm::all_of(call->operands, [](const ExprPtr &operand) {
    return isWeightExpression(*operand);
  });
}

/// The f32 tensor of a positional argument: a value, or a declared f32
/// weight (when no value has its name); null after an error.
static ExprPtr checkTensor(CheckContext &ctx, Argument &arg,
                           llvm::StringRef builtin) {
  if (auto *name = llvm::dyn_cast<NameExpr>(arg.value.get());
      name && !ctx.isValue(name->name)) {
    if (WeightDecl *weight = ctx.getWeight(name->name)) {
      weight->used = true;
      if (weight->type.elementType != ElementType::f32) {
        ctx.errorAt(*name, "'" + builtin + "' takes f32 weights, but '" +
                               weight->name + "' is " +
                               getElementTypeName(weight->type.elementType));
        return nullptr;
      }
      auto ref = std::make_unique<BuiltinExpr>("weight", name->getRange());
      ref->shape = weight->type.shape;
      ref->weights.push_back({"weight", weight});
      return ref;
    }
  }
  ExprPtr x = ctx.checkValue(std::move(arg.value));
  if (x && x->elementType != ElementType::f32) {
    ctx.errorAt(*x, "'" + builtin + "' takes an f32 tensor, but this is i32" +
                        shapeToString(x->shape));
    return nullptr;
  }
  return x;
}

static mlir::Value emitWeight(EmitContext &ctx, const BuiltinExpr &e,
                              llvm::ArrayRef<mlir::Value>) {
  return ctx.weight(e.getWeight("weight"));
}

/// `slice(x, dim = D, start = A, size = N)`: entries A .. A+N-1 of dim D.
static ExprPtr checkSlice(CheckContext &ctx, CallExpr &call, CallArgs &args) {
  ExprPtr x = checkTensor(ctx, *args.positional[0], "slice");
  if (!x)
    return nullptr;
  std::optional<size_t> d =
      resolveDim(ctx, *args.get("dim")->value, *x, "slice");
  int64_t start = args.integer("start"), size = args.integer("size");
  if (start < 0) {
    ctx.errorAt(*args.get("start")->value,
                "'start' of 'slice' must be 0 or more, got " +
                    llvm::Twine(start));
    return nullptr;
  }
  if (!d)
    return nullptr;
  const Extent &extent = x->shape[*d];
  std::optional<int64_t> limit;
  if (!extent.isSymbolic())
    limit = extent.size;
  else if (extent.dim && extent.dim->bound)
    limit = *extent.dim->bound;
  if (limit && start + size > *limit) {
    ctx.errorAt(call, "'slice' of entries " + llvm::Twine(start) + " .. " +
                          llvm::Twine(start + size - 1) + " is past dim " +
                          llvm::Twine(*d) + " of " + shapeToString(x->shape) +
                          (extent.isSymbolic()
                               ? ", whose bound is " + llvm::Twine(*limit)
                               : ", of " + llvm::Twine(*limit) + " entries"));
    return nullptr;
  }
  auto slice = std::make_unique<BuiltinExpr>("slice", call.getRange());
  slice->shape = x->shape;
  slice->shape[*d] = Extent::fixed(size);
  slice->operands.push_back(std::move(x));
  slice->attrs.push_back({"dim", BuiltinAttr::getInteger(*d)});
  slice->attrs.push_back({"offset", BuiltinAttr::getInteger(start)});
  slice->attrs.push_back({"size", BuiltinAttr::getInteger(size)});
  return slice;
}

/// `concat(a, b, ..., dim = D)`: the tensors joined along a fixed dim D;
/// they agree on every other dim.
static ExprPtr checkConcat(CheckContext &ctx, CallExpr &call, CallArgs &args) {
  std::vector<ExprPtr> parts;
  bool ok = true;
  for (Argument *arg : args.positional) {
    parts.push_back(checkTensor(ctx, *arg, "concat"));
    ok &= parts.back() != nullptr;
  }
  if (!ok)
    return nullptr;
  const Expr &first = *parts.front();
  std::optional<size_t> d =
      resolveDim(ctx, *args.get("dim")->value, first, "concat");
  if (!d)
    return nullptr;
  // The result's other dims: a part of extent 1 in one is repeated along it
  // (torch's expand), the CLS token [1, 1, D] before patches [B, N, D].
  Shape shape = first.shape;
  for (const ExprPtr &part : parts)
    for (size_t i = 0; i < shape.size() && i < part->shape.size(); ++i)
      if (shape[i] == Extent::fixed(1))
        shape[i] = part->shape[i];
  int64_t total = 0;
  for (const ExprPtr &part : parts) {
    if (part->shape.size() != first.shape.size()) {
      ctx.errorAt(*part, "the tensors of 'concat' must have one rank, but " +
                             shapeToString(first.shape) + " and " +
                             shapeToString(part->shape) + " differ");
      return nullptr;
    }
    for (size_t i = 0; i < first.shape.size(); ++i)
      if (i != *d && part->shape[i] != shape[i] &&
          part->shape[i] != Extent::fixed(1)) {
        ctx.errorAt(*part, "the tensors of 'concat' must agree on every dim "
                           "but " +
                               llvm::Twine(*d) +
                               " (or have extent 1 there), "
                               "but " +
                               shapeToString(shape) + " and " +
                               shapeToString(part->shape) + " differ in dim " +
                               llvm::Twine(i));
        return nullptr;
      }
    const Extent &extent = part->shape[*d];
    if (extent.isSymbolic()) {
      ctx.errorAt(*part, "'concat' joins fixed dims only: dim " +
                             llvm::Twine(*d) + " of " +
                             shapeToString(part->shape) +
                             " is symbolic, and the joined extent would be no "
                             "declared dim");
      return nullptr;
    }
    total += extent.size;
  }
  auto concat = std::make_unique<BuiltinExpr>("concat", call.getRange());
  concat->shape = shape;
  concat->shape[*d] = Extent::fixed(total);
  for (ExprPtr &part : parts)
    concat->operands.push_back(std::move(part));
  concat->attrs.push_back({"dim", BuiltinAttr::getInteger(*d)});
  return concat;
}

static mlir::Value emitConcat(EmitContext &ctx, const BuiltinExpr &e,
                              llvm::ArrayRef<mlir::Value> operands) {
  return ctx.getBuilder().create<mlir::attn::ConcatOp>(
      ctx.loc(e.getLoc()), ctx.tensorType(e.shape, e.elementType), operands,
      e.getAttr("dim")->integer);
}

/// `transpose(x, D1, D2)`: x with two dims swapped.
static ExprPtr checkTranspose(CheckContext &ctx, CallExpr &call,
                              CallArgs &args) {
  ExprPtr x = checkTensor(ctx, *args.positional[0], "transpose");
  if (!x)
    return nullptr;
  std::optional<size_t> d0 =
      resolveDim(ctx, *args.positional[1]->value, *x, "transpose");
  std::optional<size_t> d1 =
      resolveDim(ctx, *args.positional[2]->value, *x, "transpose");
  if (!d0 || !d1)
    return nullptr;
  if (*d0 == *d1) {
    ctx.errorAt(call, "'transpose' swaps two different dims, but both are "
                      "dim " +
                          llvm::Twine(*d0) + " of " + shapeToString(x->shape));
    return nullptr;
  }
  auto transpose = std::make_unique<BuiltinExpr>("transpose", call.getRange());
  transpose->shape = x->shape;
  std::swap(transpose->shape[*d0], transpose->shape[*d1]);
  transpose->operands.push_back(std::move(x));
  transpose->attrs.push_back(
      {"dim0", BuiltinAttr::getInteger(std::min(*d0, *d1))});
  transpose->attrs.push_back(
      {"dim1", BuiltinAttr::getInteger(std::max(*d0, *d1))});
  return transpose;
}

/// `reshape(x, [e, ...])`: x's elements in row-major order under the new
/// shape, whose extents are fixed sizes or declared dims. The symbolic dims
/// stay whole and in order, so the fixed extents before, between and after
/// them must multiply to the same counts as x's.
static ExprPtr checkReshape(CheckContext &ctx, CallExpr &call, CallArgs &args) {
  ExprPtr x = checkTensor(ctx, *args.positional[0], "reshape");
  Expr &listArg = *args.positional[1]->value;
  auto *list = llvm::dyn_cast<ListExpr>(&listArg);
  if (!list) {
    ctx.errorAt(listArg, "the new shape of 'reshape' must be a list of "
                         "extents, such as [B, S, 12, 64]");
    return nullptr;
  }
  Shape shape;
  bool ok = true;
  for (const ExprPtr &element : list->elements) {
    if (const auto *number = llvm::dyn_cast<NumberExpr>(element.get());
        number && number->isInteger && number->intValue >= 1 &&
        number->intValue <= INT32_MAX) {
      shape.push_back(Extent::fixed(number->intValue));
      continue;
    }
    if (const auto *name = llvm::dyn_cast<NameExpr>(element.get())) {
      if (DimDecl *dim = ctx.getDim(name->name)) {
        Extent extent;
        extent.dim = dim;
        extent.name = dim->name;
        shape.push_back(extent);
        continue;
      }
      ctx.errorAt(*element, "unknown dim '" + name->name + "' in 'reshape'" +
                                didYouMean(closestName(name->name,
                                                       ctx.getDims().keys())));
    } else {
      ctx.errorAt(*element, "an extent of 'reshape' must be a declared dim or "
                            "a size in 1 .. 2^31-1");
    }
    ok = false;
  }
  if (!x || !ok)
    return nullptr;
  // The runs of fixed extents between symbolic dims, and those dims.
  auto runs = [](const Shape &s, std::vector<int64_t> &counts,
                 std::vector<const DimDecl *> &symbolic) {
    counts.assign(1, 1);
    for (const Extent &e : s) {
      if (e.isSymbolic()) {
        symbolic.push_back(e.dim);
        counts.push_back(1);
      } else {
        counts.back() *= e.size;
      }
    }
  };
  std::vector<int64_t> inCounts, outCounts;
  std::vector<const DimDecl *> inDims, outDims;
  runs(x->shape, inCounts, inDims);
  runs(shape, outCounts, outDims);
  if (inDims != outDims) {
    ctx.errorAt(listArg, "'reshape' keeps the symbolic dims of " +
                             shapeToString(x->shape) +
                             " whole and in order, but " +
                             shapeToString(shape) + " does not");
    return nullptr;
  }
  for (size_t i = 0; i < inCounts.size(); ++i) {
    if (inCounts[i] == outCounts[i])
      continue;
    std::string where = inDims.empty() ? ""
                        : i == 0       ? " before '" + inDims[0]->name + "'"
                        : i == inDims.size()
                            ? " after '" + inDims[i - 1]->name + "'"
                            : " between '" + inDims[i - 1]->name + "' and '" +
                                  inDims[i]->name + "'";
    auto elements = [](int64_t n) {
      return std::to_string(n) + (n == 1 ? " element" : " elements");
    };
    ctx.errorAt(
        listArg,
        "'reshape' must keep the element count: " + shapeToString(x->shape) +
            " has " + elements(inCounts[i]) + where + ", " +
            shapeToString(shape) + " has " + llvm::Twine(outCounts[i]));
    return nullptr;
  }
  auto reshape = std::make_unique<BuiltinExpr>("reshape", call.getRange());
  reshape->shape = shape;
  reshape->operands.push_back(std::move(x));
  return reshape;
}

/// `sum(x, dim = D)` and `mean(x, dim = D)`: the dim is dropped.
static ExprPtr checkReduction(CheckContext &ctx, CallExpr &call,
                              CallArgs &args) {
  llvm::StringRef name = args.builtin->name;
  ExprPtr x = checkTensor(ctx, *args.positional[0], name);
  if (!x)
    return nullptr;
  std::optional<size_t> d = resolveDim(ctx, *args.get("dim")->value, *x, name);
  if (!d)
    return nullptr;
  if (x->shape.size() == 1) {
    ctx.errorAt(call, "'" + name + "' of " + shapeToString(x->shape) +
                          " would leave no dims; tensors have at least one");
    return nullptr;
  }
  auto reduce = std::make_unique<BuiltinExpr>(name.str(), call.getRange());
  reduce->shape = x->shape;
  reduce->shape.erase(reduce->shape.begin() + *d);
  reduce->operands.push_back(std::move(x));
  reduce->attrs.push_back({"dim", BuiltinAttr::getInteger(*d)});
  return reduce;
}

static mlir::Value emitReduction(EmitContext &ctx, const BuiltinExpr &e,
                                 llvm::ArrayRef<mlir::Value> operands) {
  return ctx.getBuilder().create<mlir::attn::ReduceOp>(
      ctx.loc(e.getLoc()), ctx.tensorType(e.shape, e.elementType), operands[0],
      e.getAttr("dim")->integer, e.builtin);
}

void attnc::registerTensorBuiltins(BuiltinRegistry &registry) {
  // A weight named as an operand of the builtins below (not callable).
  registry.add({"weight", 0, 0, "", {}, nullptr, emitWeight});
  registry.add({"slice",
                1,
                1,
                "slice(x, dim = D, start = A, size = N)",
                {NamedArg::dimension("dim").requiredAs("the dim to slice"),
                 NamedArg::integer("start", "0").byDefault(int64_t(0)),
                 NamedArg::positiveInteger("size", "64")
                     .requiredAs("the number of entries")},
                checkSlice,
                emitNamedOp});
  registry.add({"concat",
                2,
                256,
                "concat(a, b, ..., dim = D)",
                {NamedArg::dimension("dim").requiredAs("the dim to join")},
                checkConcat,
                emitConcat});
  registry.add({"transpose",
                3,
                3,
                "transpose(x, D1, D2)",
                {},
                checkTranspose,
                emitNamedOp});
  registry.add({"reshape",
                2,
                2,
                "reshape(x, [extents...])",
                {},
                checkReshape,
                emitNamedOp});
  for (const char *name : {"sum", "mean"})
    registry.add({name,
                  1,
                  1,
                  std::string(name) + "(x, dim = D)",
                  {NamedArg::dimension("dim").requiredAs("the dim to reduce")},
                  checkReduction,
                  emitReduction});
}
