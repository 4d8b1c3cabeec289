// RUN: attn-opt %s | attn-opt | FileCheck %s
// RUN: attn-opt %s -mlir-print-op-generic | attn-opt | FileCheck %s

// The functions of one tensor and the binary ops, which broadcast by rank.

// CHECK-LABEL: func.func @functions
func.func @functions(%x: tensor<?x?x8xf32>) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  // CHECK-NEXT: attn.tanh %{{.*}} : tensor<?x?x8xf32>
  %t = attn.tanh %x : tensor<?x?x8xf32>
  // CHECK-NEXT: attn.sigmoid %{{.*}} : tensor<?x?x8xf32>
  %s = attn.sigmoid %x : tensor<?x?x8xf32>
  // CHECK-NEXT: attn.silu %{{.*}} : tensor<?x?x8xf32>
  %l = attn.silu %x : tensor<?x?x8xf32>
  // CHECK-NEXT: attn.gelu_tanh %{{.*}} : tensor<?x?x8xf32>
  %g = attn.gelu_tanh %x : tensor<?x?x8xf32>
  return %t, %s, %l, %g : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>
}

// CHECK-LABEL: func.func @softmax
func.func @softmax(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  // CHECK-NEXT: attn.softmax %{{.*}} : tensor<?x?x8xf32>
  %p = attn.softmax %x : tensor<?x?x8xf32>
  return %p : tensor<?x?x8xf32>
}

// CHECK-LABEL: func.func @binary
func.func @binary(%x: tensor<?x?x8xf32>, %r: tensor<?x8xf32>, %v: tensor<8xf32>) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  // CHECK-NEXT: attn.sub %{{.*}}, %{{.*}} : tensor<?x?x8xf32>{{$}}
  %d = attn.sub %x, %x : tensor<?x?x8xf32>
  // CHECK-NEXT: attn.mul %{{.*}}, %{{.*}} : tensor<?x?x8xf32>, tensor<?x8xf32> -> tensor<?x?x8xf32>
  %m = attn.mul %x, %r : tensor<?x?x8xf32>, tensor<?x8xf32> -> tensor<?x?x8xf32>
  // CHECK-NEXT: attn.add %{{.*}}, %{{.*}} : tensor<8xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  %a = attn.add %v, %x : tensor<8xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  return %d, %m, %a : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>
}
