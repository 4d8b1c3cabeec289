//===- dialects/attn/IR/AttnInterfaces.td - attn op interfaces -*- tablegen -*-===//
//
// What passes, the driver and the frontend ask of an op, so that a new op is
// an addition to its own definition rather than to lists kept elsewhere:
// how its dims relate (symbolic dim names), what it computes on constant
// weights, how it fuses into kernels, and whether the language exposes it as
// a function of one tensor.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_INTERFACES_TD
#define ATTN_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Attn_DimMapOpInterface : OpInterface<"DimMapOpInterface"> {
  let cppNamespace = "::mlir::attn";
  let description = [{
    Which dims of an op's operands and results are the same extent. The
    `attn-check-shapes` pass and the `DimSymbols` analysis use it to name
    every dynamic dim (`B`, `S`, `T`) and to report an op that binds one dim
    to two symbols. Ops without this interface follow the broadcasting rule
    of `getBroadcastDimGroups`: operands align with the result from the last
    dim backwards, so `[S, D]` against `[B, S, D]` ties `S` to `S`.
  }];
  let methods = [
    InterfaceMethod<[{
        Appends the groups of (value, dim) pairs that must have one extent.
        A group may hold no result (e.g. the key and value sequence lengths
        of an attention).
      }], "void", "getDimGroups",
      (ins "::llvm::SmallVectorImpl<::mlir::attn::DimGroup> &":$groups), [{}],
      [{ ::mlir::attn::getBroadcastDimGroups($_op, groups); }]>,
  ];
}

def Attn_WeightExprOpInterface : OpInterface<"WeightExprOpInterface"> {
  let cppNamespace = "::mlir::attn";
  let description = [{
    An op that can compute on weights alone. When every operand is a weight
    expression (starting from `attn.weight`), the op is one too: the driver
    outlines it into the model's "init" kernels, which compute it once (at
    load, or at build time for embedded weights), so it costs nothing at run
    time, and kernels receive its value as a constant input.
  }];
  let methods = [
    InterfaceMethod<[{
        How random weights (`attnc --init-weights`) draw the weight that
        `operand` computes from, given how its result is drawn: the same by
        default; a transpose swaps the fan-in dim.
      }], "::mlir::attn::WeightInit", "getOperandWeightInit",
      (ins "::mlir::OpOperand &":$operand,
           "::mlir::attn::WeightInit":$resultInit), [{}],
      [{ return resultInit; }]>,
  ];
}

def Attn_WeightInitOpInterface : OpInterface<"WeightInitOpInterface"> {
  let cppNamespace = "::mlir::attn";
  let description = [{
    An op that reads weights says how `attnc --init-weights` draws each of
    them: a matrix uniform in +-1/sqrt(fan-in) with the fan-in read off the
    dim the op contracts, a norm's scale near one, a bias or shift near
    zero. The driver asks the users of each `attn.weight`
    (`mlir::attn::getWeightInit`), through weight expressions, so a new op
    with weights needs no list elsewhere.

    ```mlir
    %g = attn.weight "ln_f.weight" : tensor<768xf32>   // near one: a scale
    %y = attn.rms_norm %x, %g {eps = 1.0e-06 : f32, offset = 0.0 : f32} ...
    ```
  }];
  let methods = [
    InterfaceMethod<[{
        How the weight read through `operand` is drawn, or nothing when the
        operand is not one of the op's weights.
      }], "std::optional<::mlir::attn::WeightInit>", "getWeightInit",
      (ins "::mlir::OpOperand &":$operand)>,
  ];
}

def Attn_FlopCountOpInterface : OpInterface<"FlopCountOpInterface"> {
  let cppNamespace = "::mlir::attn";
  let description = [{
    The floating-point operations an op does, for profiles (GFLOP/s per
    kernel): the multiply-adds of GEMMs and attention, counted dense (a mask
    does not discount them), as `coeff` times the extents of some dims of
    its operands. The driver turns those dims into the model's symbols, so
    the runtime can count each call from the dims it binds.
  }];
  let methods = [
    InterfaceMethod<[{
        Returns the coefficient and appends the (value, dim) pairs whose
        extents multiply it.
      }], "double", "getFlopCount",
      (ins "::llvm::SmallVectorImpl<std::pair<::mlir::Value, unsigned>> &":$dims)>,
  ];
}

def Attn_FusionOpInterface : OpInterface<"FusionOpInterface"> {
  let cppNamespace = "::mlir::attn";
  let description = [{
    How `attn-form-kernels` groups an op with its neighbours. An anchor (a
    GEMM, a norm, an attention) starts a kernel; an epilogue (elementwise)
    joins the kernel of its producer when it is that value's only user; a
    prologue (an activation slice) is read in place by the anchor that is
    its only user. Ops without the interface get a kernel of their own.
  }];
  let methods = [
    StaticInterfaceMethod<"The op's part in a fused kernel.",
      "::mlir::attn::FusionRole", "getFusionRole">,
    StaticInterfaceMethod<[{
        For an anchor: whether elementwise epilogues of its result may join
        its kernel.
      }], "bool", "acceptsEpilogues", (ins), [{}], [{ return false; }]>,
    StaticInterfaceMethod<[{
        For an anchor: whether it joins the kernel of its first operand's
        producer when that kernel holds only elementwise ops (e.g. a residual
        add before a norm), so the sum is never stored.
      }], "bool", "absorbsElementwiseProducer", (ins), [{}],
      [{ return false; }]>,
  ];
}

def Attn_BuiltinFunctionOpInterface : OpInterface<"BuiltinFunctionOpInterface"> {
  let cppNamespace = "::mlir::attn";
  let description = [{
    An op the `.attn` language offers as a function of one tensor, `name(x)`,
    whose result has the operand's type. The frontend finds these ops in the
    dialect, so defining one makes it a builtin.
  }];
  let methods = [
    StaticInterfaceMethod<"The builtin's name in the language.",
      "::llvm::StringRef", "getBuiltinName", (ins), [{}],
      [{ return ConcreteOp::getOperationName().drop_front(sizeof("attn.") - 1); }]>,
  ];
}

#endif // ATTN_INTERFACES_TD
