// Layouts become memref layouts: col_major reverses the dimensions, an
// explicit order is that permutation, row_major has no layout map.  The
// shapes and accesses stay logical.  Alignment is the larger of the
// layout's and the assumption's.
// RUN: irkit-opt %s -p lower-design | filecheck %s

builtin.module {
  design.design "layouts" {
    design.size "M" = 8
    design.size "N" = 4
    design.tensor "A" : "f32" ["M", "N"] "input"
    design.tensor "B" : "f32" ["N", "M", "2"] "input"
    design.tensor "C" : "f32" ["M", "N"] "output"
    design.stmt "C" ["i", "j"] "=" {
      %0 = design.read "A" ["i", "j"] : f32
      %1 = design.read "B" ["j", "i", "1"] : f32
      %2 = arith.addf %0, %1 : f32
      design.yield %2 : f32
    }
    design.layout "A" kind "col_major" align 16
    design.layout "B" kind "order" order [1, 2, 0]
    design.layout "C" kind "row_major"
    design.assume_aligned "A" to 64
  }
}

// CHECK:      func.func @layouts(
// CHECK-SAME:   %A: memref<?x?xf32, affine_map<(d0, d1) -> (d1, d0)>> {irkit.name = "A", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>, irkit.align = 64 : i64}
// CHECK-SAME:   %B: memref<?x?x?xf32, affine_map<(d0, d1, d2) -> (d1, d2, d0)>> {irkit.name = "B", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> (s1, s0, 2)>}
// CHECK-SAME:   %C: memref<?x?xf32> {irkit.name = "C"
// CHECK-SAME:   irkit.assume = {divisible = {}, aligned = {A = 64 : i64}, noalias = []}
// CHECK-NEXT:   tensorop.generic ins(%A, %B : memref<?x?xf32, affine_map<(d0, d1) -> (d1, d0)>>, memref<?x?x?xf32, affine_map<(d0, d1, d2) -> (d1, d2, d0)>>) outs(%C : memref<?x?xf32>) sizes(%M, %N) attributes {stage = "C", loop_names = ["i", "j"], domain = affine_map<()[s0, s1] -> (s0, s1)>, indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1, d0, 1)>, affine_map<(d0, d1) -> (d0, d1)>], iterators = ["parallel", "parallel"]} {
