//===- dialects/attn/IR/AttnOps.td - attn operations -------*- tablegen -*-===//
#ifndef ATTN_OPS_TD
#define ATTN_OPS_TD

include "dialects/attn/IR/AttnDialect.td"
include "dialects/attn/IR/AttnInterfaces.td"
include "mlir/IR/OpBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

def Attn_F32Tensor : RankedTensorOf<[F32]>;
def Attn_F32Matrix : 2DTensorOf<[F32]>;
def Attn_F32Vector : 1DTensorOf<[F32]>;
/// Weights and weight expressions: f32, or bf16 / f16 kept in that precision
/// (half the bytes); kernels widen each load to f32 and compute in f32.
defvar Attn_WeightTypes = [F32, BF16, F16];
def Attn_WeightTensor : RankedTensorOf<Attn_WeightTypes>;
def Attn_WeightMatrix : 2DTensorOf<Attn_WeightTypes>;
def Attn_WeightVector : 1DTensorOf<Attn_WeightTypes>;
def Attn_WeightPanels : 3DTensorOf<Attn_WeightTypes>;
/// What weights may be stored as, and what weight expressions that only
/// move values (transpose, slice, concat, interleave, pack_panels) take: the
/// weight types, i8 and ui8, the quantized matrices that only `attn.linear`
/// reads (with their scales). A ui8 matrix holds 4-bit values, two of
/// consecutive input features per byte (low nibble first), so its `in` dim
/// is half the matrix's input features; bytes move as i8 values do.
defvar Attn_StoredWeightTypes = [F32, BF16, F16, I8, UI8];
def Attn_StoredWeightTensor : RankedTensorOf<Attn_StoredWeightTypes>;
def Attn_StoredWeightMatrix : 2DTensorOf<Attn_StoredWeightTypes>;
/// Panels, `[panels, in, width]`, bf16 pairs of inputs, `[panels, in / 2,
/// width, 2]` (attnc --precision=bf16), or i8 quads of inputs, `[panels,
/// in / 4, width, 4]` (--precision=int8).
def Attn_StoredWeightPanels : TensorRankOf<Attn_StoredWeightTypes, [3, 4]>;
def Attn_LinearWeight : TensorRankOf<Attn_StoredWeightTypes, [2, 3, 4]>;
/// What a kernel takes and returns: activations, weights (quantized ones
/// too) and i32 inputs (key lengths, token ids).
def Attn_AnyTensor : RankedTensorOf<[F32, I32, BF16, F16, I8, UI8]>;
/// The scales of a quantized matrix: one per output (i8) or one per group
/// of inputs of each output (4-bit, ui8).
def Attn_ScalesTensor : TensorRankOf<[F32], [1, 2]>;
/// A linear's scales: those, or a 4-bit matrix's packed into panels as its
/// quads of bytes are (`[panels, in / G, width]`).
def Attn_LinearScales : TensorRankOf<[F32], [1, 2, 3]>;
/// A KV cache (a state buffer): f32, or f16 / bf16 (half the bytes a decode
/// reads), or i8 with a scale per (sequence, row, key/value head) beside it
/// (a quarter). Rows are rounded or quantized to the cache's type as they
/// are written and widened to f32 as they are read (an i8 cache's scales
/// folded into the scores and probabilities), so attention computes in f32.
def Attn_CacheTensor : RankedTensorOf<[F32, BF16, F16, I8]>;
def Attn_I32Vector : 1DTensorOf<[I32]>;

class Attn_Op<string mnemonic, list<Trait> traits = []>
    : Op<Attn_Dialect, mnemonic, traits>;

/// An op that can compute on weights alone (AttnInterfaces.td).
defvar Attn_WeightExpr = Attn_WeightExprOpInterface;

/// The op's fusion role, as the body of FusionOpInterface::getFusionRole.
class Attn_FusionRole<string role> {
  code definition = [{
    ::mlir::attn::FusionRole $cppClass::getFusionRole() {
      return ::mlir::attn::FusionRole::}] # role # [{;
    }
  }];
}

//===----------------------------------------------------------------------===//
// Weight expressions: evaluated by the driver on the weight data at link time.
//===----------------------------------------------------------------------===//

def Attn_WeightOp : Attn_Op<"weight", [Pure]> {
  let summary = "a named weight tensor from the model's safetensors file";
  let description = [{
    Yields the weight stored under `name`. Its type is the declared shape and
    element type (f32, bf16, f16, or i8 for a quantized linear matrix); the
    driver checks the file against both. A quantized matrix (i8, or ui8
    bytes of 4-bit values) says how the file stores it, `out_in` or
    `in_out`, which its shape cannot say when it is square: the driver and
    the runtime check it against the file's record of how `attnc quantize`
    read it (the scales go with the outputs).

    ```mlir
    %w = attn.weight "attn.c_attn.weight" : tensor<768x2304xf32>
    %q = attn.weight "mlp.c_proj.weight" layout(in_out) : tensor<768x768xi8>
    ```
  }];
  let arguments = (ins StrAttr:$name,
                       OptionalAttr<Attn_WeightLayoutAttr>:$layout);
  let results = (outs Attn_StoredWeightTensor:$result);
  let assemblyFormat = [{
    $name (`layout` `(` $layout^ `)`)? attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

def Attn_TransposeOp : Attn_Op<"transpose", [Pure,
    DeclareOpInterfaceMethods<Attn_WeightExprOpInterface,
                              ["getOperandWeightInit"]>,
    DeclareOpInterfaceMethods<Attn_DimMapOpInterface, ["getDimGroups"]>,
    DeclareOpInterfaceMethods<Attn_FusionOpInterface>,
    SameOperandsAndResultElementType]> {
  let summary = "a tensor with two of its dims swapped";
  let description = [{
    Swaps dims `dim0` and `dim1` (by default 0 and 1, the two dims of a
    matrix), as `torch.transpose`. Two equal transposes in a row fold away,
    which is how a weight stored `[in, out]` reaches a kernel that reads
    `[in, out]` without being moved. On activations (the language's
    `transpose(x, D1, D2)`) it is a kernel of its own: it moves data, and
    the reader then reads the copy contiguously.

    ```mlir
    %t = attn.transpose %w : tensor<768x2304xf32> -> tensor<2304x768xf32>
    %h = attn.transpose %x {dim0 = 1 : i64, dim1 = 2 : i64}
        : tensor<?x?x12x64xf32> -> tensor<?x12x?x64xf32>
    ```
  }];
  let arguments = (ins Attn_StoredWeightTensor:$input,
                       DefaultValuedAttr<I64Attr, "0">:$dim0,
                       DefaultValuedAttr<I64Attr, "1">:$dim1);
  let results = (outs Attn_StoredWeightTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let extraClassDefinition = Attn_FusionRole<"Anchor">.definition;
}

def Attn_PackPanelsOp : Attn_Op<"pack_panels", [Pure, Attn_WeightExpr]> {
  let summary = "an [in, out] matrix cut into panels of `width` outputs";
  let description = [{
    Rearranges an `[in, out]` weight into `[ceil(out / width), in, width]`:
    `result[p, k, j] = input[k, p * width + j]`, and 0 past `out` in the last
    panel. Each panel is the contiguous `in x width` block one GEMM register
    tile reads, so a kernel streams it without striding across the whole
    matrix (no TLB or cache-set thrash). The element type is the input's.

    A rank-4 result holds bf16 pairs of inputs, `[ceil(out / width), in / 2,
    width, 2]`: `result[p, q, j, t] = bf16(input[2q + t, p * width + j])`,
    rounded to nearest (ties to even) from an f32 or bf16 input with an even
    `in`. Each pair is the operand of a bf16 dot product (AVX512_BF16's
    vdpbf16ps) into one f32 output.

    An i8 input packs into quads of inputs instead, `[ceil(out / width),
    in / 4, width, 4]` of i8: `result[p, q, j, t] = input[4q + t, p * width
    + j]` (0 past `out`), 4 inputs of one output per 32-bit lane, the
    operand of an int8 dot product (VNNI's vpdpbusd) into an i32 output.

    ```mlir
    %p = attn.pack_panels %w {width = 64 : i64} : tensor<768x2304xf32> -> tensor<36x768x64xf32>
    %q = attn.pack_panels %w {width = 64 : i64} : tensor<768x2304xf32> -> tensor<36x384x64x2xbf16>
    %r = attn.pack_panels %v {width = 16 : i64} : tensor<768x2304xi8> -> tensor<144x192x16x4xi8>
    ```
  }];
  let arguments = (ins Attn_StoredWeightMatrix:$input, I64Attr:$width);
  let results = (outs Attn_StoredWeightPanels:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Attn_ConcatOp : Attn_Op<"concat", [Pure, Attn_WeightExpr,
    SameOperandsAndResultElementType,
    DeclareOpInterfaceMethods<Attn_DimMapOpInterface, ["getDimGroups"]>,
    DeclareOpInterfaceMethods<Attn_FusionOpInterface>]> {
  let summary = "concatenation along one dim";
  let description = [{
    Joins tensors that agree on every other dim (the joined dim is static);
    an input of extent 1 in another dim is repeated along it (the CLS token
    of every image of a batch).
    Used to pack the Q, K and V projection weights into one GEMM operand,
    and for the language's `concat(a, b, dim = D)` of activations, a kernel
    of its own.

    ```mlir
    %qkv = attn.concat %q, %k, %v {dim = 0 : i64}
        : tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32> -> tensor<192x64xf32>
    ```
  }];
  let arguments = (ins Variadic<Attn_StoredWeightTensor>:$inputs, I64Attr:$dim);
  let results = (outs Attn_StoredWeightTensor:$result);
  let assemblyFormat =
      "$inputs attr-dict `:` type($inputs) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let extraClassDefinition = Attn_FusionRole<"Anchor">.definition;
}

def Attn_InterleaveOp : Attn_Op<"interleave", [Pure, Attn_WeightExpr]> {
  let summary = "interleaving of equal tensors along one dim";
  let description = [{
    With `n` inputs of one type, `result[.., n * i + t, ..] = input_t[.., i,
    ..]` along `dim`: entry `i` of every input side by side. Joins a gated
    unit's gate and up projections output by output, so that a GEMM tile of
    the fused weight computes matching gate and up features together and
    `attn.glu` combines them in its epilogue.

    ```mlir
    %w = attn.interleave %gate, %up {dim = 0 : i64}
        : tensor<5632x2048xf32>, tensor<5632x2048xf32> -> tensor<11264x2048xf32>
    ```
  }];
  let arguments = (ins Variadic<Attn_StoredWeightTensor>:$inputs, I64Attr:$dim);
  let results = (outs Attn_StoredWeightTensor:$result);
  let assemblyFormat =
      "$inputs attr-dict `:` type($inputs) `->` type($result)";
  let hasVerifier = 1;
}

def Attn_SliceOp : Attn_Op<"slice", [Pure, Attn_WeightExpr,
    SameOperandsAndResultElementType,
    DeclareOpInterfaceMethods<Attn_DimMapOpInterface, ["getDimGroups"]>,
    DeclareOpInterfaceMethods<Attn_FusionOpInterface>]> {
  let summary = "a contiguous range of one dim";
  let description = [{
    Takes `size` entries starting at `offset` along `dim`. On activations it
    splits a packed Q|K|V projection (and fuses into the reading kernel); on
    weights it cuts a packed weight into its parts.

    ```mlir
    %k = attn.slice %qkv {dim = 2 : i64, offset = 64 : i64, size = 64 : i64}
        : tensor<?x?x192xf32> -> tensor<?x?x64xf32>
    ```
  }];
  let arguments = (ins Attn_StoredWeightTensor:$input, I64Attr:$dim, I64Attr:$offset,
                       I64Attr:$size);
  let results = (outs Attn_StoredWeightTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let extraClassDefinition = Attn_FusionRole<"Prologue">.definition;
}

def Attn_ReshapeOp : Attn_Op<"reshape", [Pure, Attn_WeightExpr,
    SameOperandsAndResultElementType,
    DeclareOpInterfaceMethods<Attn_DimMapOpInterface, ["getDimGroups"]>,
    DeclareOpInterfaceMethods<Attn_FusionOpInterface>]> {
  let summary = "the same elements in row-major order under another shape";
  let description = [{
    As `torch.reshape` of a contiguous tensor: element `i` in row-major
    order of the input is element `i` of the result. Dynamic dims are not
    split or merged: the input and the result have the same dynamic dims in
    the same order, and between two of them (and before the first, and after
    the last) the static extents multiply to the same count. A kernel of its
    own on activations (it moves data); computed once at load on weights.

    ```mlir
    %h = attn.reshape %x : tensor<?x?x768xf32> -> tensor<?x?x12x64xf32>
    %w = attn.reshape %c : tensor<768x3x16x16xf32> -> tensor<768x768xf32>
    ```
  }];
  let arguments = (ins Attn_WeightTensor:$input);
  let results = (outs Attn_WeightTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let extraClassDefinition = Attn_FusionRole<"Anchor">.definition;
}

def Attn_ReduceOp : Attn_Op<"reduce", [Pure,
    DeclareOpInterfaceMethods<Attn_DimMapOpInterface, ["getDimGroups"]>,
    DeclareOpInterfaceMethods<Attn_FusionOpInterface,
                              ["acceptsEpilogues", "absorbsElementwiseProducer"]>]> {
  let summary = "the sum or mean over one dim, which the result drops";
  let description = [{
    `kind = "sum"` adds the entries along `dim`, `kind = "mean"` divides
    that sum by the dim's extent; the result is the input without `dim`
    (`torch.sum(x, dim)` and `torch.mean(x, dim)` with `keepdim=False`).
    Sums in f32, in order. It joins the kernel of an elementwise producer
    (`mean(a * b)` never stores the product) and takes elementwise
    epilogues.

    ```mlir
    %m = attn.reduce %w {dim = 1 : i64, kind = "mean"}
        : tensor<?x12x?x?xf32> -> tensor<?x?x?xf32>
    ```
  }];
  let arguments = (ins Attn_F32Tensor:$input, I64Attr:$dim, StrAttr:$kind);
  let results = (outs Attn_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let extraClassDefinition = Attn_FusionRole<"Anchor">.definition # [{
    bool $cppClass::acceptsEpilogues() { return true; }
    bool $cppClass::absorbsElementwiseProducer() { return true; }
  }];
}

def Attn_ScaleOp : Attn_Op<"scale", [Pure, SameOperandsAndResultType,
    Attn_WeightExpr, DeclareOpInterfaceMethods<Attn_FusionOpInterface>]> {
  let summary = "multiplication by a constant";
  let description = [{
    `result = factor * input`. Folding the attention scale into the query
    projection produces these on weights (f32 weights only: a scaled bf16 or
    f16 weight would be rounded again, so `attn-fold-scale` leaves their
    scale in the attention).

    ```mlir
    %s = attn.scale %w {factor = 1.250000e-01 : f32} : tensor<64x64xf32>
    ```
  }];
  let arguments = (ins Attn_F32Tensor:$input, F32Attr:$factor);
  let results = (outs Attn_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasFolder = 1;
  let hasCanonicalizer = 1;
  let extraClassDefinition = Attn_FusionRole<"Epilogue">.definition;
}

//===----------------------------------------------------------------------===//
// Model-level ops, as the frontend emits them.
//===----------------------------------------------------------------------===//

def Attn_LinearOp : Attn_Op<"linear", [Pure, AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<Attn_WeightInitOpInterface>,
    DeclareOpInterfaceMethods<Attn_DimMapOpInterface, ["getDimGroups"]>,
    DeclareOpInterfaceMethods<Attn_FlopCountOpInterface>,
    DeclareOpInterfaceMethods<Attn_FusionOpInterface, ["acceptsEpilogues"]>]> {
  let summary = "affine projection of the last dim";
  let description = [{
    `result = input @ W^T + bias` for `layout = out_in` (W is `[out, in]`, as
    PyTorch stores it) and `input @ W + bias` for `layout = in_out`. With
    `layout = panels` the weight is `attn.pack_panels` of an `[in, out]`
    matrix, `[out / width, in, width]`, or its bf16 pairs of inputs, `[out /
    width, in / 2, width, 2]`: then the input is rounded to bf16 (to nearest,
    ties to even) and each pair's products summed in f32 (attnc
    --precision=bf16).

    An i8 weight is quantized per output channel: its `scales` (f32, one per
    output) give `W[o, :] = scales[o] * q[o, :]`, so `result[o] = scales[o] *
    (input @ q^T)[o] + bias[o]`, with the i8 values widened to f32 as they are
    loaded and the sum accumulated in f32. Scales are required with an i8
    weight and an error with any other.

    A ui8 weight holds 4-bit values q in 0..15, two of consecutive input
    features per byte (the even one in the low nibble), so its `in` dim
    counts bytes, half the input features. Its `scales` have one entry per
    group of G consecutive inputs of each output: `[out, in / G]` for
    `layout = out_in`, `[in / G, out]` for `in_out` and `panels`, and
    `[out / width, in / G, width]` beside quads of bytes, `[out / width, in
    / 8, width, 4]` (G, which must divide `in`, is read from their shape),
    and `W[o, i] = (q[o, i] - 8) * scales[o, i / G]`, each weight
    dequantized in registers as it is loaded.

    ```mlir
    %y = attn.linear %x, %w, %b layout(in_out)
        : (tensor<?x?x768xf32>, tensor<768x3072xf32>, tensor<3072xf32>) -> tensor<?x?x3072xf32>
    %z = attn.linear %x, %q, %b scales %s layout(out_in)
        : (tensor<?x?x768xf32>, tensor<3072x768xi8>, tensor<3072xf32>, tensor<3072xf32>) -> tensor<?x?x3072xf32>
    %u = attn.linear %x, %p scales %g layout(out_in)
        : (tensor<?x?x768xf32>, tensor<3072x384xui8>, tensor<3072x24xf32>) -> tensor<?x?x3072xf32>
    ```
  }];
  let arguments = (ins Attn_F32Tensor:$input, Attn_LinearWeight:$weight,
                       Optional<Attn_WeightVector>:$bias,
                       Optional<Attn_LinearScales>:$scales,
                       Attn_WeightLayoutAttr:$layout);
  let results = (outs Attn_F32Tensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? (`scales` $scales^)? `layout` `(` $layout `)`
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The weight's input and output feature counts, whatever its layout.
    int64_t getInFeatures();
    int64_t getOutFeatures();
  }];
  let extraClassDefinition = Attn_FusionRole<"Anchor">.definition # [{
    bool $cppClass::acceptsEpilogues() { return true; }
  }];
}

def Attn_LayerNormOp : Attn_Op<"layer_norm", [Pure,
    DeclareOpInterfaceMethods<Attn_WeightInitOpInterface>,
    DeclareOpInterfaceMethods<Attn_FusionOpInterface,
                              ["absorbsElementwiseProducer"]>]> {
  let summary = "layer normalisation of the last dim";
  let description = [{
    `(x - mean) / sqrt(var + epsilon) * gamma + beta` over the last dim, with
    the biased variance (as PyTorch).

    ```mlir
    %n = attn.layer_norm %x, %g, %b {epsilon = 9.99999974E-6 : f32}
        : (tensor<?x?x768xf32>, tensor<768xf32>, tensor<768xf32>) -> tensor<?x?x768xf32>
    ```
  }];
  let arguments = (ins Attn_F32Tensor:$input, Attn_WeightVector:$gamma,
                       Attn_WeightVector:$beta, F32Attr:$epsilon);
  let results = (outs Attn_F32Tensor:$result);
  let assemblyFormat = "$input `,` $gamma `,` $beta attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let extraClassDefinition = Attn_FusionRole<"Anchor">.definition # [{
    bool $cppClass::absorbsElementwiseProducer() { return true; }
  }];
}

def Attn_RmsNormOp : Attn_Op<"rms_norm", [Pure,
    DeclareOpInterfaceMethods<Attn_WeightInitOpInterface>,
    DeclareOpInterfaceMethods<Attn_FusionOpInterface,
                              ["absorbsElementwiseProducer"]>]> {
  let summary = "root-mean-square normalisation of the last dim";
  let description = [{
    `x / sqrt(mean(x^2) + epsilon) * (offset + gamma)` over the last dim, in
    f32: Hugging Face's `LlamaRMSNorm` with `offset = 0`, Gemma's
    `GemmaRMSNorm` (which scales by `1 + weight`) with `offset = 1`. No
    shift, and no centring.

    ```mlir
    %n = attn.rms_norm %x, %g {epsilon = 9.99999997E-7 : f32, offset = 0.0 : f32}
        : (tensor<?x?x2048xf32>, tensor<2048xf32>) -> tensor<?x?x2048xf32>
    ```
  }];
  let arguments = (ins Attn_F32Tensor:$input, Attn_WeightVector:$gamma,
                       F32Attr:$epsilon, F32Attr:$offset);
  let results = (outs Attn_F32Tensor:$result);
  let assemblyFormat = "$input `,` $gamma attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let extraClassDefinition = Attn_FusionRole<"Anchor">.definition # [{
    bool $cppClass::absorbsElementwiseProducer() { return true; }
  }];
}

def Attn_EmbeddingOp : Attn_Op<"embedding", [Pure,
    DeclareOpInterfaceMethods<Attn_WeightInitOpInterface>,
    DeclareOpInterfaceMethods<Attn_DimMapOpInterface, ["getDimGroups"]>,
    DeclareOpInterfaceMethods<Attn_FusionOpInterface>]> {
  let summary = "rows of a table picked by integer ids";
  let description = [{
    `result[..., d] = table[ids[...], d]`: token (or position, or token-type)
    embeddings, as `torch.nn.Embedding`. An id outside `0 .. V-1` fails the run
    with an error naming its place and value.

    A quantized table is stored as `attn.linear` stores an `out_in` matrix,
    a row per id: i8 with one scale per row (`result[..., d] = scales[id] *
    table[id, d]`), or ui8, two 4-bit values of consecutive features per
    byte (the even one in the low nibble, so its dim 1 is `D / 2`), with
    `scales` `[V, D / G]` (`result[..., d] = (q[id, d] - 8) * scales[id, d /
    G]`). So a head tied to the table (`attn.linear` of the same weight)
    reads the same bytes and scales. Scales are required with an i8 or ui8
    table and an error with any other.

    ```mlir
    %e = attn.embedding %ids, %wte : (tensor<?x?xi32>, tensor<50257x768xf32>) -> tensor<?x?x768xf32>
    %q = attn.embedding %ids, %wte8 scales %s
        : (tensor<?x?xi32>, tensor<50257x768xi8>, tensor<50257xf32>) -> tensor<?x?x768xf32>
    %h = attn.embedding %ids, %wte4 scales %g
        : (tensor<?x?xi32>, tensor<50257x384xui8>, tensor<50257x24xf32>) -> tensor<?x?x768xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[I32]>:$ids,
                       Attn_StoredWeightMatrix:$table,
                       Optional<Attn_ScalesTensor>:$scales);
  let results = (outs Attn_F32Tensor:$result);
  let assemblyFormat = [{
    $ids `,` $table (`scales` $scales^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDefinition = Attn_FusionRole<"Epilogue">.definition;
  let extraClassDeclaration = [{
    /// The features of a row, D: the table's dim 1, twice it for ui8.
    int64_t getFeatures();
  }];
}

def Attn_PositionsOp : Attn_Op<"positions", [Pure,
    DeclareOpInterfaceMethods<Attn_DimMapOpInterface, ["getDimGroups"]>,
    DeclareOpInterfaceMethods<Attn_FusionOpInterface>]> {
  let summary = "the positions 0, 1, ... n-1 along one dim of a tensor";
  let description = [{
    `result[..., j] = j` for `j < n`, where `n` is the extent of dim `dim`
    of `input`, as `torch.arange(x.size(dim))`: position ids for a model
    that takes none as an input. Only `input`'s extent is read, never its
    data. The result is `[n]`, or `input`'s dims `0 .. dim` (`[B, n]`), the
    same positions for every sequence, unless there is an `offset` (`[B]`,
    i32: each sequence's position in its KV cache when decoding), which
    needs the `[B, n]` form: `result[b, j] = offset[b] + j`. A `start`
    shifts every position (`torch.arange(start, start + n)`): BART's learned
    positions begin at row 2 of their table.

    ```mlir
    %p = attn.positions %ids {dim = 1 : i64} : (tensor<?x?xi32>) -> tensor<?xi32>
    %q = attn.positions %ids offset(%pos) {dim = 1 : i64}
        : (tensor<?x?xi32>, tensor<?xi32>) -> tensor<?x?xi32>
    %r = attn.positions %ids {dim = 1 : i64, start = 2 : i64}
        : (tensor<?x?xi32>) -> tensor<?xi32>
    ```
  }];
  let arguments = (ins Attn_AnyTensor:$input, I64Attr:$dim,
                       Optional<Attn_I32Vector>:$offset,
                       DefaultValuedAttr<I64Attr, "0">:$start);
  let results = (outs RankedTensorOf<[I32]>:$result);
  let assemblyFormat = [{
    $input (`offset` `(` $offset^ `)`)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDefinition = Attn_FusionRole<"Epilogue">.definition;
}

def Attn_SinusoidalOp : Attn_Op<"sinusoidal", [Pure,
    DeclareOpInterfaceMethods<Attn_DimMapOpInterface, ["getDimGroups"]>,
    DeclareOpInterfaceMethods<Attn_FusionOpInterface>]> {
  let summary = "sinusoidal position encoding (Vaswani et al.)";
  let description = [{
    For integer positions `p` and `D` features (the result's last dim, even):
    `result[..., 2i] = sin(p / 10000^(2i/D))` and
    `result[..., 2i+1] = cos(p / 10000^(2i/D))`, interleaved as in
    "Attention Is All You Need" and PyTorch's transformer tutorial.

    ```mlir
    %pe = attn.sinusoidal %p : (tensor<?xi32>) -> tensor<?x512xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[I32]>:$positions);
  let results = (outs Attn_F32Tensor:$result);
  let assemblyFormat = "$positions attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let extraClassDefinition = Attn_FusionRole<"Epilogue">.definition;
}

def Attn_RelativeBiasOp : Attn_Op<"relative_bias", [Pure, AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<Attn_WeightInitOpInterface>,
    DeclareOpInterfaceMethods<Attn_DimMapOpInterface, ["getDimGroups"]>,
    DeclareOpInterfaceMethods<Attn_FusionOpInterface>]> {
  let summary = "T5's bucketed relative position bias of every head";
  let description = [{
    `result[b, h, i, j] = table[bucket(j - i), h]` for the queries `i` and
    keys `j` of one sequence, `input`'s dim 1 (`[B, S, ...]`; only its
    extents are read): an attention's additive mask term. `table` is
    `[num_buckets, heads]` (T5's `relative_attention_bias`). As
    `T5Attention._relative_position_bucket` computes it, with
    `bidirectional` half of the buckets are for keys after the query; the
    first `max_exact` = half of the remaining buckets `n` hold distance `n`
    exactly, the rest grow logarithmically up to `max_distance`, past which
    every distance shares the last bucket. Without `bidirectional` a key
    after the query is at distance 0. The log is taken in f32 as PyTorch
    does; the buckets are a table over distances `0 .. max_distance - 1`
    computed once at compile time.

    Decoding with a KV cache, `query_offsets` (`[B]`, i32: the tokens
    already in each sequence's caches) and `keys` (the key cache `[B, L,
    features]`, of which only the extents are read) come together: query `i`
    of sequence `b` is at position `query_offsets[b] + i` and the keys are
    the cache's rows `0 .. L-1`, so the result is `[B, heads, S, L]` with
    `result[b, h, i, j] = table[bucket(j - query_offsets[b] - i), h]`, as
    Hugging Face's `T5Attention.compute_bias` with `past_seen_tokens`.

    ```mlir
    %b = attn.relative_bias %x, %table bidirectional {max_distance = 128 : i64}
        : (tensor<?x?x512xf32>, tensor<32x8xf32>) -> tensor<?x8x?x?xf32>
    %d = attn.relative_bias %x, %table query_offsets(%pos) keys(%cache)
        {max_distance = 128 : i64}
        : (tensor<?x?x512xf32>, tensor<32x8xf32>, tensor<?xi32>,
           tensor<?x?x512xf32>) -> tensor<?x8x?x?xf32>
    ```
  }];
  let arguments = (ins Attn_F32Tensor:$input, Attn_WeightMatrix:$table,
                       Optional<Attn_I32Vector>:$query_offsets,
                       Optional<Attn_CacheTensor>:$keys,
                       ConfinedAttr<I64Attr, [IntPositive]>:$max_distance,
                       UnitAttr:$bidirectional);
  let results = (outs Attn_F32Tensor:$result);
  let assemblyFormat = [{
    $input `,` $table (`bidirectional` $bidirectional^)?
    (`query_offsets` `(` $query_offsets^ `)`)? (`keys` `(` $keys^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  // Read in place by the attention it feeds alone; one shared by several
  // attentions is computed once into a buffer.
  let extraClassDefinition = Attn_FusionRole<"Prologue">.definition;
  let extraClassDeclaration = [{
    /// The buckets of distances 0 .. max_distance - 1 (after the direction's
    /// offset), as T5Attention._relative_position_bucket gives them; every
    /// distance past them is in the last bucket of its direction.
    SmallVector<int32_t> getDistanceBuckets();
    /// Buckets per direction: all of them, or half with `bidirectional`.
    int64_t getBucketsPerDirection();
  }];
}

def Attn_RopeOp : Attn_Op<"rope", [Pure,
    DeclareOpInterfaceMethods<Attn_DimMapOpInterface, ["getDimGroups"]>,
    DeclareOpInterfaceMethods<Attn_FusionOpInterface>]> {
  let summary = "rotary position embedding of every head";
  let description = [{
    Rotates pairs of features of each `head_dim` slice of the last dim by
    angles `positions * theta^(-2i / head_dim)` (RoPE, Su et al.). With
    `style(half)` feature `i` pairs with `i + head_dim / 2` (Hugging Face's
    `rotate_half`: Llama, Mistral, Qwen, GPT-NeoX); with `style(interleaved)`
    feature `2i` pairs with `2i + 1` (GPT-J). `positions` are i32, `[S]` or
    `[B, S]` along the input's batch and sequence dims, so a decoder may pass
    `P + s`. The frequencies, angles, cosines and sines are computed in f32
    as `LlamaRotaryEmbedding` does. In a kernel it is read in place by the
    attention that uses it (a prologue).

    With `rotary_dims = N` (partial rotary: GPT-NeoX's `rotary_pct`,
    `partial_rotary_factor`) only the first `N` features of each head
    rotate, pairing within those `N` (`i` with `i + N / 2`, or `2i` with
    `2i + 1`) at frequencies `theta^(-2i / N)`; the others pass through.
    `scaling` rescales the frequencies as Hugging Face's `rope_type` does, in
    f32: `linear` divides them by `factor`; `llama3` divides those whose
    wavelength exceeds `original_max / low_freq_factor` by `factor`, keeps
    those below `original_max / high_freq_factor` and interpolates between
    (`_compute_llama3_parameters`). Both leave the cosines and sines
    unscaled (their `attention_factor` is 1).

    ```mlir
    %r = attn.rope %q, %p style(half) {head_dim = 64 : i64, theta = 1.0e+04 : f32}
        : (tensor<?x?x2048xf32>, tensor<?xi32>) -> tensor<?x?x2048xf32>
    %n = attn.rope %k, %p style(half) {head_dim = 64 : i64, rotary_dims = 16 : i64,
        theta = 1.0e+04 : f32}
        : (tensor<?x?x2048xf32>, tensor<?xi32>) -> tensor<?x?x2048xf32>
    %l = attn.rope %q, %p style(half) {head_dim = 64 : i64, theta = 5.0e+05 : f32,
        scaling = #attn<rope_scaling llama3>, factor = 8.0 : f32,
        low_freq_factor = 1.0 : f32, high_freq_factor = 4.0 : f32,
        original_max = 8192 : i64}
        : (tensor<?x?x2048xf32>, tensor<?xi32>) -> tensor<?x?x2048xf32>
    ```
  }];
  let arguments = (ins Attn_F32Tensor:$input, RankedTensorOf<[I32]>:$positions,
                       ConfinedAttr<I64Attr, [IntPositive]>:$head_dim,
                       Attn_RopeStyleAttr:$style, F32Attr:$theta,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$rotary_dims,
                       OptionalAttr<Attn_RopeScalingAttr>:$scaling,
                       OptionalAttr<F32Attr>:$factor,
                       OptionalAttr<F32Attr>:$low_freq_factor,
                       OptionalAttr<F32Attr>:$high_freq_factor,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$original_max);
  let results = (outs Attn_F32Tensor:$result);
  let assemblyFormat = [{
    $input `,` $positions `style` `(` $style `)` attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDefinition = Attn_FusionRole<"Prologue">.definition;
  let extraClassDeclaration = [{
    /// The rotated features of each head: `rotary_dims`, or all of them.
    int64_t getNumRotaryDims() {
      return getRotaryDims() ? *getRotaryDims() : getHeadDim();
    }
    /// The scaling attributes, as computeRopeInvFreq takes them.
    RopeScalingParams getScalingParams();
  }];
}

def Attn_SoftmaxOp : Attn_Op<"softmax", [Pure, SameOperandsAndResultType,
    DeclareOpInterfaceMethods<Attn_FusionOpInterface,
                              ["absorbsElementwiseProducer"]>,
    Attn_BuiltinFunctionOpInterface]> {
  let summary = "softmax over the last dim";
  let description = [{
    `exp(x - max) / sum(exp(x - max))` over the last dim, as `torch.softmax(x,
    -1)`: e.g. next-token probabilities from logits. A builtin `softmax(x)`.

    ```mlir
    %p = attn.softmax %logits : tensor<?x?x50257xf32>
    ```
  }];
  let arguments = (ins Attn_F32Tensor:$input);
  let results = (outs Attn_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
  let extraClassDefinition = Attn_FusionRole<"Anchor">.definition # [{
    bool $cppClass::absorbsElementwiseProducer() { return true; }
  }];
}

/// An elementwise function of one tensor: an epilogue in kernels, and a
/// builtin `mnemonic(x)` of the language. Its Halide lowering is one line of
/// compiler/codegen/lowerings/Elementwise.cpp.
class Attn_UnaryOp<string mnemonic, string what>
    : Attn_Op<mnemonic, [Pure, SameOperandsAndResultType,
                         DeclareOpInterfaceMethods<Attn_FusionOpInterface>,
                         Attn_BuiltinFunctionOpInterface]> {
  let summary = what;
  let arguments = (ins Attn_F32Tensor:$input);
  let results = (outs Attn_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let extraClassDefinition = Attn_FusionRole<"Epilogue">.definition;
}

def Attn_ReluOp : Attn_UnaryOp<"relu", "max(x, 0)"> {
  let description = [{
    ```mlir
    %r = attn.relu %x : tensor<?x?x3072xf32>
    ```
  }];
}

def Attn_GeluOp : Attn_UnaryOp<"gelu", "GELU, exact (erf) form"> {
  let description = [{
    `0.5 x (1 + erf(x / sqrt(2)))`, PyTorch's default.

    ```mlir
    %g = attn.gelu %x : tensor<?x?x3072xf32>
    ```
  }];
}

def Attn_GeluTanhOp : Attn_UnaryOp<"gelu_tanh", "GELU, tanh approximation"> {
  let description = [{
    `0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))`: PyTorch's
    `gelu(approximate="tanh")` and Hugging Face GPT-2's `gelu_new`.

    ```mlir
    %g = attn.gelu_tanh %x : tensor<?x?x3072xf32>
    ```
  }];
}

def Attn_TanhOp : Attn_UnaryOp<"tanh", "hyperbolic tangent"> {
  let description = [{
    ```mlir
    %t = attn.tanh %x : tensor<?x?x64xf32>
    ```
  }];
}

def Attn_SigmoidOp : Attn_UnaryOp<"sigmoid", "logistic sigmoid 1 / (1 + exp(-x))"> {
  let description = [{
    ```mlir
    %s = attn.sigmoid %x : tensor<?x?x64xf32>
    ```
  }];
}

def Attn_SiluOp : Attn_UnaryOp<"silu", "SiLU (swish), x * sigmoid(x)"> {
  let description = [{
    ```mlir
    %s = attn.silu %x : tensor<?x?x3072xf32>
    ```
  }];
}

def Attn_SoftcapOp : Attn_Op<"softcap", [Pure, SameOperandsAndResultType,
    DeclareOpInterfaceMethods<Attn_FusionOpInterface>]> {
  let summary = "soft capping, cap * tanh(x / cap)";
  let description = [{
    Squashes values smoothly into `(-cap, cap)`, near the identity for
    `|x| << cap`: Gemma-2's `final_logit_softcapping` (`cap = 30`) on its
    logits. `cap` must be positive and finite. An elementwise epilogue.

    ```mlir
    %c = attn.softcap %logits {cap = 3.000000e+01 : f32} : tensor<?x?x256000xf32>
    ```
  }];
  let arguments = (ins Attn_F32Tensor:$input, F32Attr:$cap);
  let results = (outs Attn_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
  let extraClassDefinition = Attn_FusionRole<"Epilogue">.definition;
}

def Attn_GluOp : Attn_Op<"glu", [Pure,
    DeclareOpInterfaceMethods<Attn_FusionOpInterface>]> {
  let summary = "gated linear unit of interleaved gate and up features";
  let description = [{
    `result[.., j] = act(input[.., 2j]) * input[.., 2j + 1]`, where `act` is
    the function of one tensor named by `activation` (e.g. `silu`: SwiGLU,
    `gelu`: GeGLU) and the input is one GEMM over `attn.interleave`d gate
    and up weights. `attn-fuse-gated-linears` forms it from
    `act(linear(x, gate)) * linear(x, up)`; an epilogue of that GEMM, so
    the `[.., 2I]` product is never stored.

    ```mlir
    %m = attn.glu %gu {activation = "silu"} : tensor<?x?x11264xf32> -> tensor<?x?x5632xf32>
    ```
  }];
  let arguments = (ins Attn_F32Tensor:$input, StrAttr:$activation);
  let results = (outs Attn_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let extraClassDefinition = Attn_FusionRole<"Epilogue">.definition;
}

/// An elementwise op of two tensors that broadcast by rank (numpy's rule):
/// the shorter shape must equal the trailing dims of the longer, which is
/// the result's. Written `%a, %b : T` when all three types are one, else
/// `%a, %b : Ta, Tb -> Tr`.
class Attn_BinaryOp<string mnemonic, string what>
    : Attn_Op<mnemonic, [Pure,
                         DeclareOpInterfaceMethods<Attn_FusionOpInterface>]> {
  let summary = what;
  let arguments = (ins Attn_F32Tensor:$lhs, Attn_F32Tensor:$rhs);
  let results = (outs Attn_F32Tensor:$result);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let extraClassDefinition = Attn_FusionRole<"Epilogue">.definition # [{
    ::mlir::ParseResult $cppClass::parse(::mlir::OpAsmParser &parser,
                                         ::mlir::OperationState &result) {
      return parseBinaryOp(parser, result);
    }
    void $cppClass::print(::mlir::OpAsmPrinter &printer) {
      printBinaryOp(printer, *this);
    }
    ::mlir::LogicalResult $cppClass::verify() {
      return verifyBinaryOp(*this);
    }
  }];
}

def Attn_AddOp : Attn_BinaryOp<"add", "elementwise sum (e.g. a residual connection)"> {
  let description = [{
    ```mlir
    %s = attn.add %x, %a : tensor<?x?x768xf32>
    %p = attn.add %x, %pos : tensor<?x?x768xf32>, tensor<?x768xf32> -> tensor<?x?x768xf32>
    ```
  }];
}

def Attn_SubOp : Attn_BinaryOp<"sub", "elementwise difference"> {
  let description = [{
    ```mlir
    %d = attn.sub %x, %y : tensor<?x?x768xf32>
    ```
  }];
}

def Attn_MulOp : Attn_BinaryOp<"mul", "elementwise product"> {
  let description = [{
    The product of two tensors, e.g. the gate of a gated FFN.

    ```mlir
    %m = attn.mul %g, %u : tensor<?x?x3072xf32>
    ```
  }];
}

def Attn_SelfAttentionOp : Attn_Op<"self_attention",
    [Pure, AttrSizedOperandSegments,
     DeclareOpInterfaceMethods<Attn_DimMapOpInterface, ["getDimGroups"]>,
     DeclareOpInterfaceMethods<Attn_WeightInitOpInterface>]> {
  let summary = "multi-head self-attention with its projections";
  let description = [{
    Projects `input` to queries, keys and values (three projections, or one
    packed `qkv` projection whose output is Q|K|V), runs scaled dot-product
    attention per head and applies the output projection. Weights are in
    `[out, in]` layout. Each head has `head_dim` features (default
    d_model / heads; Gemma 2's differ): the q projection is
    `[heads * head_dim, D]`, the output projection `[D, heads * head_dim]`.
    `scale` defaults to 1/sqrt(head_dim). The
    mask, key lengths and additive bias are `attn.sdpa`'s; with a `weights`
    result the attention probabilities `[B, heads, S, S]` are returned too.
    With `kv_heads = K` (grouped-query attention) the key and value
    projections have `K * head_dim` outputs each (a packed `qkv` is
    `[(heads + 2K) * head_dim, D]`, Q|K|V). With `rope` the queries and keys
    of every head are rotated (`attn.rope`, base `rope_theta`, default
    10000) at positions 0 .. S-1 after the projections; `rope_dims`,
    `rope_scaling` and its `rope_factor`, `rope_low_freq_factor`,
    `rope_high_freq_factor`, `rope_original_max` are `attn.rope`'s
    `rotary_dims`, `scaling`, `factor`, ... ; `softcap` is `attn.sdpa`'s.
    With `qkv_per_head` the packed `qkv` rows are grouped by head, `[heads,
    3, head_dim]` (GPT-NeoX's `query_key_value`: each head's Q, K, V rows
    together) rather than Q|K|V; the decomposition gathers each part with
    `attn.slice` and `attn.concat` weight expressions (computed once, at
    load).

    A projection's matrix may be i8, quantized per output channel: its
    `q_scales`, ..., `out_scales` (f32, one per output row) are then
    required, as `attn.linear`'s `scales`, which the decomposition passes
    them to (a packed `qkv`'s sliced as its rows are). It may be ui8 (4-bit
    values two per byte, `[out, in / 2]`) with scales `[out, in / G]`, one
    per group of G inputs of a row, as `attn.linear`'s with `layout =
    out_in`.

    With `key_cache` and `value_cache` (state buffers `[B, L, features]`, a
    KV cache) the keys and values are also written into the caches: at rows
    `0 .. S-1` without a `position` (prefill), where the attention reads the
    new keys; with `position` (`[B]`, the tokens already in the caches, one
    value for the whole batch) at rows `P .. P+S-1`, and the queries, at
    positions `P + i`, attend over the caches' first `P + S` rows (decode).
    A decode's additive `bias` is then over the cache's rows, `[B, heads, S,
    L]` (T5's relative position bias at the decode's positions). The caches
    may be f16 or bf16 (both of one type): the rows written are rounded to
    it, and a decode reads them widened to f32. They may be i8 (both), with
    `key_cache_scale` and `value_cache_scale` (f32 states `[B, L, kv_heads]`,
    one scale per row and head): the rows are quantized per head as they
    are written (`attn.cache_write`'s `groups`), and a decode folds the
    scales into its scores and probabilities (`attn.sdpa`'s `key_scale`).

    ```mlir
    %a = attn.self_attention %x heads(12) mask<causal> qkv(%wqkv, %bqkv) out(%wo, %bo)
        : (tensor<?x?x768xf32>, tensor<2304x768xf32>, tensor<2304xf32>,
           tensor<768x768xf32>, tensor<768xf32>) -> tensor<?x?x768xf32>
    %l = attn.self_attention %x heads(32) kv_heads(4) mask<causal> rope(half)
        q(%wq) k(%wk) v(%wv) out(%wo)
        : (tensor<?x?x2048xf32>, tensor<2048x2048xf32>, tensor<256x2048xf32>,
           tensor<256x2048xf32>, tensor<2048x2048xf32>) -> tensor<?x?x2048xf32>
    ```
  }];
  let arguments = (ins Attn_F32Tensor:$input,
      Optional<Attn_StoredWeightMatrix>:$q_weight, Optional<Attn_WeightVector>:$q_bias,
      Optional<Attn_StoredWeightMatrix>:$k_weight, Optional<Attn_WeightVector>:$k_bias,
      Optional<Attn_StoredWeightMatrix>:$v_weight, Optional<Attn_WeightVector>:$v_bias,
      Optional<Attn_StoredWeightMatrix>:$qkv_weight, Optional<Attn_WeightVector>:$qkv_bias,
      Attn_StoredWeightMatrix:$out_weight, Optional<Attn_WeightVector>:$out_bias,
      Optional<Attn_I32Vector>:$key_lengths, Optional<Attn_F32Tensor>:$bias,
      Optional<Attn_CacheTensor>:$key_cache, Optional<Attn_CacheTensor>:$value_cache,
      Optional<Attn_I32Vector>:$position,
      Optional<Attn_F32Tensor>:$key_cache_scale,
      Optional<Attn_F32Tensor>:$value_cache_scale,
      Optional<Attn_ScalesTensor>:$q_scales, Optional<Attn_ScalesTensor>:$k_scales,
      Optional<Attn_ScalesTensor>:$v_scales, Optional<Attn_ScalesTensor>:$qkv_scales,
      Optional<Attn_ScalesTensor>:$out_scales,
      ConfinedAttr<I64Attr, [IntPositive]>:$heads, Attn_MaskAttr:$mask,
      OptionalAttr<F32Attr>:$scale,
      OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$kv_heads,
      OptionalAttr<Attn_RopeStyleAttr>:$rope, OptionalAttr<F32Attr>:$rope_theta,
      OptionalAttr<F32Attr>:$softcap,
      OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$head_dim,
      OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$rope_dims,
      OptionalAttr<Attn_RopeScalingAttr>:$rope_scaling,
      OptionalAttr<F32Attr>:$rope_factor,
      OptionalAttr<F32Attr>:$rope_low_freq_factor,
      OptionalAttr<F32Attr>:$rope_high_freq_factor,
      OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$rope_original_max,
      UnitAttr:$qkv_per_head);
  let results = (outs Attn_F32Tensor:$result,
                      Optional<Attn_F32Tensor>:$weights);
  let assemblyFormat = [{
    $input `heads` `(` $heads `)` (`kv_heads` `(` $kv_heads^ `)`)? `mask` `` $mask
    (`rope` `(` $rope^ `)`)?
    (`q` `(` $q_weight^ (`,` $q_bias^)? `)`)?
    (`k` `(` $k_weight^ (`,` $k_bias^)? `)`)?
    (`v` `(` $v_weight^ (`,` $v_bias^)? `)`)?
    (`qkv` `(` $qkv_weight^ (`,` $qkv_bias^)? `)`)?
    `out` `(` $out_weight (`,` $out_bias^)? `)`
    (`lengths` `(` $key_lengths^ `)`)?
    (`bias` `(` $bias^ `)`)?
    (`key_cache` `(` $key_cache^ `)`)?
    (`value_cache` `(` $value_cache^ `)`)?
    (`position` `(` $position^ `)`)?
    (`key_cache_scale` `(` $key_cache_scale^ `)`)?
    (`value_cache_scale` `(` $value_cache_scale^ `)`)?
    (`q_scales` `(` $q_scales^ `)`)?
    (`k_scales` `(` $k_scales^ `)`)?
    (`v_scales` `(` $v_scales^ `)`)?
    (`qkv_scales` `(` $qkv_scales^ `)`)?
    (`out_scales` `(` $out_scales^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// 1/sqrt(head_dim) unless the model set a scale.
    float getEffectiveScale();
    /// Features per head: `head_dim`, or d_model / heads.
    int64_t getHeadDimension();
    /// The rope scaling attributes, as attn.rope takes them.
    RopeScalingParams getRopeScalingParams();
    /// Key/value heads (`kv_heads`, or `heads`).
    int64_t getNumKvHeads() { return getKvHeads() ? *getKvHeads() : getHeads(); }
    /// Features of the keys (and of the values): what a cache row holds.
    int64_t getKeyFeatures();
    LogicalResult verifyCaches();
  }];
}

//===----------------------------------------------------------------------===//
// Core ops that passes decompose into.
//===----------------------------------------------------------------------===//

def Attn_SdpaOp : Attn_Op<"sdpa", [Pure, AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<Attn_WeightInitOpInterface>,
    DeclareOpInterfaceMethods<Attn_DimMapOpInterface, ["getDimGroups"]>,
    DeclareOpInterfaceMethods<Attn_FlopCountOpInterface>,
    DeclareOpInterfaceMethods<Attn_FusionOpInterface>]> {
  let summary = "scaled dot-product attention over heads";
  let description = [{
    Queries `[..., Sq, heads * dk]`, keys `[..., Sk, kv_heads * dk]` and
    values `[..., Sk, kv_heads * dv]`, split into heads; query head `h` reads
    key/value head `h / (heads / kv_heads)` (grouped-query attention when
    `kv_heads < heads`; `kv_heads` defaults to `heads`). Per head it computes
    `softmax(score + bias, masked) V` and joins the heads along the last dim,
    `[..., Sq, heads * dv]`. The score is `scale * Q K^T`, or with a
    `score` vector `w` (Bahdanau's additive attention over projected Q and K)
    `scale * sum_e w_e tanh(Q_e + K_e)`; `w` is `[dk]` or `[1, dk]` (the
    weight of an `nn.Linear(dk, 1)`). A `scale` of 1 means it has been
    folded into the query projection.
    With `softcap = C` the scaled score becomes `C * tanh(score / C)`
    before the bias and the mask are applied (Gemma 2's attention logit
    soft-capping).

    Which keys a query sees is the `mask` attribute, further limited by
    `lengths` (`[B]`, i32: key `j` of batch `b` is seen when `j < lengths[b]`,
    PyTorch's `key_padding_mask`). `bias` is added to the scores, broadcast
    from `[Sq, Sk]`, `[B, Sq, Sk]` or `[B, heads, Sq, Sk]` (PyTorch's float
    `attn_mask`; `-inf` hides a key). A query that sees no key gets zeros.
    With the optional second result the probabilities `[..., heads, Sq, Sk]`
    are returned as well (masked entries exactly 0, rows summing to 1).

    `query_offsets` (`[B]`, i32; decoding with a KV cache, where the keys are
    a cache of capacity `Sk`) puts query `i` of batch `b` at key position
    `query_offsets[b] + i`: it sees no key past `query_offsets[b] + Sq - 1`
    (rows of the cache not yet written), and the mask's terms compare
    against that position (the mask's `offset` must then be 0). Keys and
    values may then be an f16 or bf16 cache, widened to f32 as they are read,
    or an i8 cache with `key_scale` and `value_scale` (`[B, Sk, kv_heads]`,
    f32): a key's score is `scale * key_scale[b, j, g] * sum_e q[e] k[e]`
    over its i8 values, and a value's probability is multiplied by
    `value_scale[b, j, g]` before it weights the i8 values (`g` the query
    head's key/value head), so no element is scaled on its own.

    ```mlir
    %o = attn.sdpa %q, %k, %v heads(12) mask<causal> {scale = 1.250000e-01 : f32}
        : tensor<?x?x768xf32>, tensor<?x?x768xf32>, tensor<?x?x768xf32> -> tensor<?x?x768xf32>
    %c, %w = attn.sdpa %q, %m, %m heads(2) mask<none> lengths(%len) {scale = 1.0 : f32}
        : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>, tensor<?x2x?x?xf32>
    ```
  }];
  let arguments = (ins Attn_F32Tensor:$query, Attn_CacheTensor:$key,
      Attn_CacheTensor:$value, Optional<Attn_I32Vector>:$key_lengths,
      Optional<Attn_F32Tensor>:$bias, Optional<Attn_F32Tensor>:$score,
      Optional<Attn_I32Vector>:$query_offsets,
      Optional<Attn_F32Tensor>:$key_scale, Optional<Attn_F32Tensor>:$value_scale,
      ConfinedAttr<I64Attr, [IntPositive]>:$heads,
      OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$kv_heads,
      Attn_MaskAttr:$mask, F32Attr:$scale, OptionalAttr<F32Attr>:$softcap);
  let results = (outs Attn_F32Tensor:$result,
                      Optional<Attn_F32Tensor>:$weights);
  let assemblyFormat = [{
    $query `,` $key `,` $value `heads` `(` $heads `)` `mask` `` $mask
    (`lengths` `(` $key_lengths^ `:` type($key_lengths) `)`)?
    (`bias` `(` $bias^ `:` type($bias) `)`)?
    (`score` `(` $score^ `:` type($score) `)`)?
    (`query_offsets` `(` $query_offsets^ `:` type($query_offsets) `)`)?
    (`key_scale` `(` $key_scale^ `:` type($key_scale) `)`)?
    (`value_scale` `(` $value_scale^ `:` type($value_scale) `)`)?
    attr-dict `:` type($query) `,` type($key) `,` type($value) `->` type(results)
  }];
  let hasVerifier = 1;
  let extraClassDefinition = Attn_FusionRole<"Anchor">.definition;
  let extraClassDeclaration = [{
    /// Key/value heads (`kv_heads`, or `heads`).
    int64_t getNumKvHeads() { return getKvHeads() ? *getKvHeads() : getHeads(); }
    /// Features per query/key head and per value head.
    int64_t getKeyHeadDim();
    int64_t getValueHeadDim();
  }];
}

def Attn_CacheWriteOp : Attn_Op<"cache_write", [AllTypesMatch<["cache", "result"]>,
    DeclareOpInterfaceMethods<Attn_DimMapOpInterface, ["getDimGroups"]>,
    DeclareOpInterfaceMethods<Attn_FusionOpInterface>]> {
  let summary = "new rows written into a KV cache, in place";
  let description = [{
    `cache` (`[B, L, F]`, a state buffer the caller owns) with rows
    `P .. P+S-1` replaced by `rows` (`[B, S, F]`), where `P` is `position[0]`
    (`[B]`, one value for the whole batch) or 0 without `position`. The result
    is the cache itself: the driver gives both one buffer, and the kernel
    writes only the new rows (no copy of the cache). A write that does not
    fit (`P < 0`, `P + S > L`) or positions that differ within the batch fail
    the run before anything is written. An f16 or bf16 cache gets the rows
    rounded to its type, to nearest even (as PyTorch's `.to(torch.float16)`:
    NaN stays NaN, an f16 overflow becomes infinity).

    An i8 cache takes `groups` (`G`, the key/value heads): each row's
    features are quantized per group of `F / G` (one head) with the scale
    `s = max |x| / 127` of the group, `q = round(x / s)` to nearest even
    (0 for an all-zero group). The scales go into their own state with the
    same write marked `scales`: `cache` is then `[B, L, G]` f32 and gets `s`
    (NaN for a group with an Inf or NaN, so its attention is NaN rather
    than quietly wrong), computed by the same expression as the i8 write's.

    ```mlir
    %kc = attn.cache_write %cache, %k at(%pos)
        : (tensor<?x?x256xf32>, tensor<?x?x256xf32>, tensor<?xi32>) -> tensor<?x?x256xf32>
    %kq = attn.cache_write %qcache, %k at(%pos) {groups = 4 : i64}
        : (tensor<?x?x256xi8>, tensor<?x?x256xf32>, tensor<?xi32>) -> tensor<?x?x256xi8>
    %ks = attn.cache_write %scales, %k at(%pos) {groups = 4 : i64, scales}
        : (tensor<?x?x4xf32>, tensor<?x?x256xf32>, tensor<?xi32>) -> tensor<?x?x4xf32>
    ```
  }];
  let arguments = (ins Attn_CacheTensor:$cache, Attn_F32Tensor:$rows,
                       Optional<Attn_I32Vector>:$position,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$groups,
                       UnitAttr:$scales);
  let results = (outs Attn_CacheTensor:$result);
  let assemblyFormat = [{
    $cache `,` $rows (`at` `(` $position^ `)`)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDefinition = Attn_FusionRole<"Anchor">.definition;
}

//===----------------------------------------------------------------------===//
// Kernels.
//===----------------------------------------------------------------------===//

def Attn_KernelOp : Attn_Op<"kernel", [IsolatedFromAbove,
    SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "a group of ops compiled into one fused kernel";
  let description = [{
    The body's block arguments are the kernel's inputs (activations first,
    then weights as the driver orders them); `attn.yield` lists its outputs.
    Codegen turns each kernel into one Halide pipeline.

    ```mlir
    %y = attn.kernel @k0(%x, %w, %b) : (tensor<?x?x64xf32>, tensor<64x256xf32>, tensor<256xf32>) -> tensor<?x?x256xf32> {
    ^bb0(%a: tensor<?x?x64xf32>, %aw: tensor<64x256xf32>, %ab: tensor<256xf32>):
      %l = attn.linear %a, %aw, %ab layout(in_out) : (tensor<?x?x64xf32>, tensor<64x256xf32>, tensor<256xf32>) -> tensor<?x?x256xf32>
      %g = attn.gelu %l : tensor<?x?x256xf32>
      attn.yield %g : tensor<?x?x256xf32>
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, Variadic<Attn_AnyTensor>:$inputs);
  let results = (outs Variadic<Attn_AnyTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $sym_name `(` $inputs `)` attr-dict `:` functional-type($inputs, $results)
    $body
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The kernel's ops, types and attributes, without its name or where its
    /// operands come from: kernels with equal keys compute one function (the
    /// same layer again), so their code is compiled once.
    std::string getStructuralKey();
  }];
}

def Attn_YieldOp : Attn_Op<"yield", [Pure, Terminator, ReturnLike,
    HasParent<"KernelOp">]> {
  let summary = "the outputs of an attn.kernel";
  let description = [{
    ```mlir
    attn.yield %g : tensor<?x?x256xf32>
    ```
  }];
  let arguments = (ins Variadic<Attn_AnyTensor>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
  let builders = [OpBuilder<(ins), [{ /* empty yield */ }]>];
}

#endif // ATTN_OPS_TD
