// RUN: rm -rf %t && mkdir %t
// RUN: attnc %s --init-weights=%t/w.safetensors
// RUN: attnc %s --weights %t/w.safetensors -o %t/m.so
// RUN: attn-run %t/m.so --info | FileCheck %s
// RUN: attnc %S/Inputs/inputs-5x8.mlir --init-weights=%t/in.safetensors
// RUN: attn-run %t/m.so --inputs %t/in.safetensors --outputs %t/out.safetensors

// Every output has a buffer of its own: an input, a value returned twice and
// a weight are copied into theirs; a kernel result is written in place.
// CHECK: model outputs (built by
// CHECK: inputs:
// CHECK-NEXT:   x: F32 [S <= 64, 8]
// CHECK-NEXT: outputs:
// CHECK-NEXT:   same: F32 [S <= 64, 8]
// CHECK-NEXT:   relu1: F32 [S <= 64, 8]
// CHECK-NEXT:   relu2: F32 [S <= 64, 8]
// CHECK-NEXT:   bias: F32 [8]
func.func @model(%x: tensor<?x8xf32> {attn.dim_symbols = ["S"], attn.name = "x"})
    -> (tensor<?x8xf32> {attn.name = "same"}, tensor<?x8xf32> {attn.name = "relu1"},
        tensor<?x8xf32> {attn.name = "relu2"}, tensor<8xf32> {attn.name = "bias"})
    attributes {attn.symbols = [["S", 64]], attn.model_name = "outputs"} {
  %r = attn.relu %x : tensor<?x8xf32>
  %b = attn.weight "b" : tensor<8xf32>
  return %x, %r, %r, %b : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<8xf32>
}
