//===- dialects/attn/IR/AttnDialect.td - attn dialect ------*- tablegen -*-===//
//
// The attn dialect: transformer blocks as users write them (self_attention,
// linear, layer_norm, ...), the core they decompose into (sdpa, slice, ...),
// weight expressions folded at link time, and attn.kernel regions that each
// become one fused Halide pipeline.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_DIALECT_TD
#define ATTN_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Attn_Dialect : Dialect {
  let name = "attn";
  let summary = "Multi-head attention models and their fused kernels";
  let description = [{
    Ops work on ranked f32 tensors whose last dim is the feature dim; leading
    dims (batch, sequence) may be dynamic (`?`) and are named by the model's
    symbolic dims (the `attn.dim_symbols` argument attribute of the model
    function). Weights enter as `attn.weight` ops naming a safetensors key;
    ops that only read weights form weight expressions that the driver folds
    into prepacked constants.
  }];
  let cppNamespace = "::mlir::attn";
  let useDefaultAttributePrinterParser = 1;
}

def Attn_WeightLayout : I32EnumAttr<"WeightLayout", "storage order of a linear weight", [
    I32EnumAttrCase<"out_in", 0>,
    I32EnumAttrCase<"in_out", 1>,
    I32EnumAttrCase<"panels", 2>]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
}
def Attn_WeightLayoutAttr : EnumAttr<Attn_Dialect, Attn_WeightLayout, "layout">;

def Attn_RopeStyle : I32EnumAttr<"RopeStyle", "which features rotary embeddings pair", [
    I32EnumAttrCase<"half", 0>,
    I32EnumAttrCase<"interleaved", 1>]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
}
def Attn_RopeStyleAttr : EnumAttr<Attn_Dialect, Attn_RopeStyle, "rope_style">;

def Attn_RopeScaling : I32EnumAttr<"RopeScaling", "how rotary frequencies are scaled (Hugging Face's rope_type)", [
    I32EnumAttrCase<"linear", 0>,
    I32EnumAttrCase<"llama3", 1>]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
}
def Attn_RopeScalingAttr : EnumAttr<Attn_Dialect, Attn_RopeScaling, "rope_scaling">;

def Attn_MaskAttr : AttrDef<Attn_Dialect, "Mask"> {
  let mnemonic = "mask";
  let summary = "which keys each query of an attention sees";
  let description = [{
    Query `i` sees key `j` when every term holds (with `p = i + offset`, the
    query's position among the keys):
    - `causal`: `j <= p`;
    - `window(left, right)`: `p - left <= j <= p + right` (`*` for no bound
      on that side).
    `none` holds no term. `alibi` hides no key: it adds `slope_h * (j - p)`
    to the scores of query head `h` (ALiBi, Press et al.; BLOOM's and MPT's
    slopes `2^(-8 (h + 1) / n)` for `n` heads a power of two, with the
    interleaved extra slopes of `build_alibi_tensor` otherwise). Operands of the attention add more: key lengths
    (`j < length[b]`) and an additive bias. `offset` aligns queries that are
    the last `S` of `offset + S` keys (decoding with a cache), and is 0 when
    queries and keys are the same sequence.

    Written as its terms, with `offset(N)` when it is not 0:

    ```mlir
    mask<none>  mask<causal>  mask<causal, window(255, 0)>  mask<causal, offset(3)>
    mask<causal, alibi>
    ```
  }];
  let parameters = (ins "bool":$causal, "int64_t":$offset,
                        "int64_t":$windowLeft, "int64_t":$windowRight,
                        "bool":$alibi);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let builders = [
    AttrBuilder<(ins), [{ return $_get($_ctxt, false, 0, -1, -1, false); }]>,
    AttrBuilder<(ins "bool":$causal, "int64_t":$offset,
                     "int64_t":$windowLeft, "int64_t":$windowRight), [{
      return $_get($_ctxt, causal, offset, windowLeft, windowRight, false);
    }]>,
  ];
  let extraClassDeclaration = [{
    /// A window side of -1 is unbounded.
    bool hasWindow() const { return getWindowLeft() >= 0 || getWindowRight() >= 0; }
    bool isNone() const { return !getCausal() && !hasWindow() && !getAlibi(); }
  }];
}

#endif // ATTN_DIALECT_TD
