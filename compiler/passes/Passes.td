//===- compiler/passes/Passes.td - attn passes -------------*- tablegen -*-===//
#ifndef ATTNC_PASSES_TD
#define ATTNC_PASSES_TD

include "mlir/Pass/PassBase.td"

def AttnCheckShapesPass : Pass<"attn-check-shapes", "func::FuncOp"> {
  let summary = "Check that symbolic dims agree across every op";
  let description = [{
    Types only say a dim is dynamic (`?`); the model function's arguments say
    which symbolic dim it is (`attn.dim_symbols`). This pass propagates those
    names through every op and reports an op whose operands bind one dim to
    two different symbols (e.g. adding a `[B, S, D]` to a `[S, B, D]` tensor),
    or a dynamic dim with no symbol.

    ```mlir
    // error: 'attn.add' op operand dim 0 is 'B' on one side and 'S' on the other
    ```
  }];
}

def AttnDecomposeAttentionPass : Pass<"attn-decompose-attention", "func::FuncOp"> {
  let summary = "Split attn.self_attention into projections and attn.sdpa";
  let description = [{
    Each `attn.self_attention` becomes three `attn.linear` projections (a packed
    QKV weight is sliced into its Q, K and V rows), one `attn.sdpa` carrying the
    scale and mask, and the output `attn.linear`.

    ```mlir
    %a = attn.self_attention %x heads(2) mask(causal) qkv(%w) out(%wo) : ...
    // becomes
    %wq = attn.slice %w {dim = 0, offset = 0, size = 8} ...
    %q = attn.linear %x, %wq layout(out_in) ...
    ...
    %o = attn.sdpa %q, %k, %v heads(2) mask(causal) {scale = 0.5 : f32} ...
    %a = attn.linear %o, %wo layout(out_in) ...
    ```
  }];
  let dependentDialects = ["::mlir::attn::AttnDialect"];
}

def AttnFoldScalePass : Pass<"attn-fold-scale", "func::FuncOp"> {
  let summary = "Fold the 1/sqrt(d_k) attention scale into the query weights";
  let description = [{
    `attn.sdpa` with `scale = s` whose query is an `attn.linear` used only
    there becomes `scale = 1` with the query weight and bias multiplied by `s`
    (as `attn.scale` weight expressions, evaluated at link time), saving one
    multiply per score.

    ```mlir
    %q = attn.linear %x, %w, %b layout(out_in) ...
    %o = attn.sdpa %q, %k, %v heads(2) mask(none) {scale = 0.5 : f32} ...
    // becomes
    %ws = attn.scale %w {factor = 0.5 : f32} ...
    %bs = attn.scale %b {factor = 0.5 : f32} ...
    %q = attn.linear %x, %ws, %bs layout(out_in) ...
    %o = attn.sdpa %q, %k, %v heads(2) mask(none) {scale = 1.0 : f32} ...
    ```
  }];
}

def AttnFuseQKVPass : Pass<"attn-fuse-qkv", "func::FuncOp"> {
  let summary = "Fuse the Q, K and V projections of one input into one GEMM";
  let description = [{
    When the query, key and value of an `attn.sdpa` are `attn.linear`s of the
    same input with the same layout, each used only there, they become one
    linear over the concatenated weights, followed by three activation slices
    that the kernel former fuses into the attention kernel.

    ```mlir
    %q = attn.linear %x, %wq ...
    %k = attn.linear %x, %wk ...
    %v = attn.linear %x, %wv ...
    // becomes
    %w = attn.concat %wq, %wk, %wv {dim = 0 : i64} ...
    %qkv = attn.linear %x, %w ...
    %q = attn.slice %qkv {dim = 2 : i64, offset = 0 : i64, size = 64 : i64} ...
    ```
  }];
}

def AttnFuseGatedLinearsPass
    : Pass<"attn-fuse-gated-linears", "func::FuncOp"> {
  let summary = "One GEMM for the gate and up projections of a gated unit";
  let description = [{
    `act(linear(x, gate)) * linear(x, up)` (SwiGLU with `silu`, as Llama's
    `act_fn(gate_proj(x)) * up_proj(x)`; GeGLU with `gelu`), with both
    linears of the same input, layout and bias presence, each used only
    there, becomes one linear over the gate and up weights interleaved
    output by output, and an `attn.glu` epilogue that applies `act` to the
    even features and multiplies by the odd ones. A GEMM tile then computes
    matching gate and up features together, and the kernel former fuses the
    glu into the GEMM, so the `[.., 2I]` product is never stored. `act` is
    any elementwise function of one tensor.

    ```mlir
    %g = attn.linear %x, %wg layout(out_in) : ... -> tensor<?x?x176xf32>
    %a = attn.silu %g : tensor<?x?x176xf32>
    %u = attn.linear %x, %wu layout(out_in) : ... -> tensor<?x?x176xf32>
    %m = attn.mul %a, %u : tensor<?x?x176xf32>
    // becomes
    %w = attn.interleave %wg, %wu {dim = 0 : i64} : ... -> tensor<352x64xf32>
    %gu = attn.linear %x, %w layout(out_in) : ... -> tensor<?x?x352xf32>
    %m = attn.glu %gu {activation = "silu"} : tensor<?x?x352xf32> -> tensor<?x?x176xf32>
    ```
  }];
}

def AttnPackWeightsPass : Pass<"attn-pack-weights", "func::FuncOp"> {
  let summary = "Give every linear weight the layout its kernel reads";
  let description = [{
    The CPU GEMM schedule vectorises over output features, so it reads weights
    `[in, out]` with the output features contiguous. Every `layout(out_in)`
    linear gets an `attn.transpose` of its weight and `layout(in_out)`; a
    weight that was declared `[in, out]` (and transposed by the frontend)
    folds back to the stored tensor, so it is never moved.

    ```mlir
    %y = attn.linear %x, %w layout(out_in) : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> ...
    // becomes
    %t = attn.transpose %w : tensor<16x8xf32> -> tensor<8x16xf32>
    %y = attn.linear %x, %t layout(in_out) : (tensor<?x?x8xf32>, tensor<8x16xf32>) -> ...
    ```

    With `panel-width=P` (the GEMM tile width of the target's schedule), an
    `[in, out]` weight whose output features P divides is then cut into
    `attn.pack_panels` of P outputs and read with `layout(panels)`, so each
    register tile streams one contiguous panel.

    With `bf16-pairs` (attnc --precision=bf16) an f32 or bf16 weight with an
    even number of inputs is packed into bf16 pairs of inputs instead,
    `[ceil(out / P), in / 2, P, 2]` (f32 rounded to bf16 once, at load), the
    operand of AVX512_BF16's dot product (vdpbf16ps); the linear then rounds
    its input to bf16 too and sums the products in f32.

    With `quantized-out-in` (attnc --precision=int8), i8 and 4-bit weights
    are read `[out, in]` instead (an `[in, out]` one transposed, its 4-bit
    group scales with it), never in panels: the int8 dot products read a
    row of bytes per output.

    With `int8-panel-width=W` as well (a target with int8 dot products over
    vectors of W i32 lanes, VNNI), an i8 matrix whose inputs are whole
    blocks of 32 (the activation quantization's block) is packed into i8
    quads of inputs instead, `[ceil(out / W), in / 4, W, 4]` (`[out, in]`
    ones transposed first): the int8 GEMM's lanes run over W outputs, each
    summing 4 inputs per dot product. 4-bit matrices stay `[out, in]`.
  }];
  let options = [
    Option<"panelWidth", "panel-width", "int64_t", /*default=*/"0",
           "Output features per weight panel (0: keep [in, out])">,
    Option<"bf16Pairs", "bf16-pairs", "bool", /*default=*/"false",
           "Pack f32 and bf16 panels as bf16 pairs of inputs (needs "
           "panel-width)">,
    Option<"quantizedOutIn", "quantized-out-in", "bool", /*default=*/"false",
           "Keep i8 and 4-bit weights [out, in] (transposing [in, out] "
           "ones): --precision=int8's dot products read a row per output">,
    Option<"int8PanelWidth", "int8-panel-width", "int64_t", /*default=*/"0",
           "With quantized-out-in: pack i8 weights into quads of inputs in "
           "panels of this many outputs (0: keep them [out, in])">
  ];
}

def AttnFormKernelsPass : Pass<"attn-form-kernels", "func::FuncOp"> {
  let summary = "Group activation ops into attn.kernel regions";
  let description = [{
    Every op on activations ends up in exactly one `attn.kernel`, which codegen
    turns into one Halide pipeline. Groups: a linear with the elementwise ops
    that consume only its result (bias, GELU/ReLU, residual add); the activation
    slices feeding an sdpa with the sdpa; a residual add whose only user is a
    layer norm with that norm. Weight expressions stay outside: they become
    kernel inputs. Intermediate values used outside a group are yielded.

    ```mlir
    %l = attn.linear %x, %w, %b layout(in_out) ...
    %g = attn.gelu %l ...
    // becomes
    %g = attn.kernel @k0(%x, %w, %b) : ... {
    ^bb0(...):
      %0 = attn.linear ...
      %1 = attn.gelu %0 ...
      attn.yield %1 ...
    }
    ```
  }];
}

def AttnPruneEntryInputsPass : Pass<"attn-prune-entry-inputs", "func::FuncOp"> {
  let summary = "Drop the inputs a prefill or decode entry does not read";
  let description = [{
    A function with an `attn.entry` ("prefill", "decode") takes every model
    input as MLIRGen wrote it; after dead code is removed, some of them may
    be read by nothing: an encoder-decoder's decode reads its cross
    attentions' keys and values from their caches, so the encoder and its
    input ids are dead. Such arguments are removed, so the entry's inputs
    are the ones its computation reads (a decode keeps `position`, and
    states are always kept). The model function ("run", no `attn.entry`)
    keeps every input. No dim symbol the function uses is lost: a value's
    symbols come from the arguments it is computed from (`DimSymbols`), so
    an unread argument bound none of them, and a decode's `T` (the memory's
    length) is bound by its cross-attention caches.

    ```mlir
    func.func @decode(%src: tensor<?x?xi32> {attn.dim_symbols = ["B", "T"], attn.name = "src"},
                      %ids: tensor<?x?xi32> {attn.dim_symbols = ["B", "S"], attn.name = "ids"}, ...)
        attributes {attn.entry = "decode"} // %src unused
    // becomes
    func.func @decode(%ids: tensor<?x?xi32> {attn.dim_symbols = ["B", "S"], attn.name = "ids"}, ...)
    ```
  }];
}

#endif // ATTNC_PASSES_TD
