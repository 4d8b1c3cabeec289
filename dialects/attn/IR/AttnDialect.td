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

def Attn_Mask : I32EnumAttr<"Mask", "attention mask", [
    I32EnumAttrCase<"none", 0>,
    I32EnumAttrCase<"causal", 1>]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
}
def Attn_MaskAttr : EnumAttr<Attn_Dialect, Attn_Mask, "mask">;

#endif // ATTN_DIALECT_TD
