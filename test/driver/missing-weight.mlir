// RUN: attnc %S/Inputs/block.mlir --init-weights=%t.safetensors
// RUN: not attnc %s --weights %t.safetensors -o %t.so 2>&1 | FileCheck %s

// A weight the file lacks is reported at its declaration, with the names the
// file has that come closest.
func.func @model(%x: tensor<?x8xf32> {attn.dim_symbols = ["S"]}) -> tensor<?x16xf32> {
  // CHECK: missing-weight.mlir:[[@LINE+3]]:8: error: weight 'fc.wieght' is not in '{{.*}}.safetensors'; closest names there: 'fc.weight', 'ln.weight', 'ln.bias': fix the name in the model or export the weight
  // CHECK-NEXT: %w = attn.weight "fc.wieght" : tensor<16x8xf32>
  // CHECK-NEXT: ^
  %w = attn.weight "fc.wieght" : tensor<16x8xf32>
  %l = attn.linear %x, %w layout(out_in) : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
  return %l : tensor<?x16xf32>
}
