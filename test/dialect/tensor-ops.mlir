// RUN: attn-opt %s | attn-opt | FileCheck %s
// RUN: attn-opt %s -mlir-print-op-generic | attn-opt | FileCheck %s
// RUN: attn-opt %s -canonicalize | FileCheck %s --check-prefix=CANON
// The layout ops and reductions of activations: any rank, dynamic dims.

// CHECK-LABEL: func.func @activations(
// CHECK-SAME: %[[X:.*]]: tensor<?x?x768xf32>
func.func @activations(%x: tensor<?x?x768xf32>) -> tensor<?x?xf32> {
  // CHECK-NEXT: %[[R:.*]] = attn.reshape %[[X]] : tensor<?x?x768xf32> -> tensor<?x?x12x64xf32>
  %r = attn.reshape %x : tensor<?x?x768xf32> -> tensor<?x?x12x64xf32>
  // CHECK-NEXT: %[[T:.*]] = attn.transpose %[[R]] {dim0 = 1 : i64, dim1 = 2 : i64} : tensor<?x?x12x64xf32> -> tensor<?x12x?x64xf32>
  %t = attn.transpose %r {dim0 = 1 : i64, dim1 = 2 : i64} : tensor<?x?x12x64xf32> -> tensor<?x12x?x64xf32>
  // CHECK-NEXT: %[[S:.*]] = attn.slice %[[T]] {dim = 1 : i64, offset = 2 : i64, size = 4 : i64} : tensor<?x12x?x64xf32> -> tensor<?x4x?x64xf32>
  %s = attn.slice %t {dim = 1 : i64, offset = 2 : i64, size = 4 : i64} : tensor<?x12x?x64xf32> -> tensor<?x4x?x64xf32>
  // CHECK-NEXT: %[[C:.*]] = attn.concat %[[S]], %[[S]] {dim = 1 : i64} : tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32> -> tensor<?x8x?x64xf32>
  %c = attn.concat %s, %s {dim = 1 : i64} : tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32> -> tensor<?x8x?x64xf32>
  // CHECK-NEXT: %[[M:.*]] = attn.reduce %[[C]] {dim = 1 : i64, kind = "mean"} : tensor<?x8x?x64xf32> -> tensor<?x?x64xf32>
  %m = attn.reduce %c {dim = 1 : i64, kind = "mean"} : tensor<?x8x?x64xf32> -> tensor<?x?x64xf32>
  // CHECK-NEXT: attn.reduce %[[M]] {dim = 2 : i64, kind = "sum"} : tensor<?x?x64xf32> -> tensor<?x?xf32>
  %u = attn.reduce %m {dim = 2 : i64, kind = "sum"} : tensor<?x?x64xf32> -> tensor<?x?xf32>
  return %u : tensor<?x?xf32>
}

// A part of extent 1 is repeated along the result's dim (a CLS token).
// CHECK-LABEL: func.func @repeat_part(
// CHECK-NEXT: attn.concat %{{.*}}, %{{.*}} {dim = 1 : i64} : tensor<1x1x8xf32>, tensor<?x4x8xf32> -> tensor<?x5x8xf32>
func.func @repeat_part(%cls: tensor<1x1x8xf32>, %x: tensor<?x4x8xf32>) -> tensor<?x5x8xf32> {
  %c = attn.concat %cls, %x {dim = 1 : i64} : tensor<1x1x8xf32>, tensor<?x4x8xf32> -> tensor<?x5x8xf32>
  return %c : tensor<?x5x8xf32>
}

// The same swap twice folds away, two different swaps do not; a reshape to
// the same type folds.
// CANON-LABEL: func.func @folds(
// CANON-SAME: %[[X:.*]]: tensor<?x4x8x16xf32>
// CANON-NEXT: %[[A:.*]] = attn.transpose %[[X]] {dim0 = 1 : i64, dim1 = 2 : i64}
// CANON-NEXT: %[[B:.*]] = attn.transpose %[[A]] {dim0 = 2 : i64, dim1 = 3 : i64}
// CANON-NEXT: return %[[X]], %[[B]]
func.func @folds(%x: tensor<?x4x8x16xf32>) -> (tensor<?x4x8x16xf32>, tensor<?x8x16x4xf32>) {
  %a = attn.transpose %x {dim0 = 1 : i64, dim1 = 2 : i64} : tensor<?x4x8x16xf32> -> tensor<?x8x4x16xf32>
  %b = attn.transpose %a {dim0 = 2 : i64, dim1 = 1 : i64} : tensor<?x8x4x16xf32> -> tensor<?x4x8x16xf32>
  %c = attn.reshape %b : tensor<?x4x8x16xf32> -> tensor<?x4x8x16xf32>
  %d = attn.transpose %a {dim0 = 2 : i64, dim1 = 3 : i64} : tensor<?x8x4x16xf32> -> tensor<?x8x16x4xf32>
  return %c, %d : tensor<?x4x8x16xf32>, tensor<?x8x16x4xf32>
}
