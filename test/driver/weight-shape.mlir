// RUN: attnc %S/Inputs/block.mlir --init-weights=%t.safetensors
// RUN: not attnc %s --weights %t.safetensors -o %t.so 2>&1 | FileCheck %s

// The file stores fc.weight as [16, 8]; every mismatch is reported, not just
// the first.
func.func @model(%x: tensor<?x8xf32> {attn.dim_symbols = ["S"]}) -> tensor<?x16xf32> {
  // CHECK: weight-shape.mlir:[[@LINE+1]]:8: error: weight 'fc.weight' in '{{.*}}.safetensors' has shape [16, 8] but the model declares it [8, 16]: fix the declaration or the exported tensor
  %w = attn.weight "fc.weight" : tensor<8x16xf32>
  // CHECK: weight-shape.mlir:[[@LINE+1]]:8: error: weight 'ln.bias' in '{{.*}}.safetensors' has shape [8] but the model declares it [16]
  %b = attn.weight "ln.bias" : tensor<16xf32>
  %l = attn.linear %x, %w, %b layout(in_out) : (tensor<?x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<?x16xf32>
  return %l : tensor<?x16xf32>
}
