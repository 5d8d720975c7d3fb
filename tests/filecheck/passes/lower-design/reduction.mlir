// An index statement with a reduction index becomes a fill with the
// reduction's identity and a generic whose body ends with the combiner;
// the reduction loop comes after the output's loops.
// RUN: irkit-opt %s -p lower-design --split-input-file | filecheck %s

builtin.module {
  design.design "rowmax" {
    design.size "M" = 64
    design.size "N" = 32
    design.tensor "X" : "f32" ["M", "N"] "input"
    design.tensor "m" : "f32" ["M"] "output"
    design.stmt "m" ["i"] "max=" {
      %0 = design.read "X" ["i", "j"] : f32
      design.yield %0 : f32
    } loc("rowmax.design":5:3)
    design.schedule "m" {
      design.vectorize "j" by 8 loc("rowmax.design":7:5)
    }
  }
}

// CHECK:      func.func @rowmax(%M: index {irkit.name = "M", irkit.default = 64 : i64}, %N: index {irkit.name = "N", irkit.default = 32 : i64}, %X: memref<?x?xf32> {irkit.name = "X", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>}, %m: memref<?xf32> {irkit.name = "m", irkit.role = "output", irkit.shape = affine_map<()[s0, s1] -> (s0)>})
// CHECK-NEXT:   tensorop.fill %m : memref<?xf32> sizes(%M, %N) {value = 0xff800000 : f32, stage = "m"}
// CHECK-NEXT:   tensorop.generic ins(%X : memref<?x?xf32>) outs(%m : memref<?xf32>) sizes(%M, %N) attributes {stage = "m", loop_names = ["i", "j"], domain = affine_map<()[s0, s1] -> (s0, s1)>, indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterators = ["parallel", "reduction"], schedule = [{kind = "vectorize", loop = "j", width = 8 : i64, loc = "rowmax.design:7:5"}]} {
// CHECK-NEXT:   ^bb0(%[[X:.*]]: f32, %[[M:.*]]: f32):
// CHECK-NEXT:     %[[R:.*]] = arith.maximumf %[[M]], %[[X]] : f32
// CHECK-NEXT:     tensorop.yield %[[R]] : f32
// CHECK-NEXT:   }
// CHECK-NEXT:   func.return

// -----

// Integer sums: identity 0 : i32, combiner arith.addi; the reduction index
// takes its range from the dimension it indexes (k: K, the columns of A).
builtin.module {
  design.design "dot" {
    design.size "K" = 16
    design.tensor "a" : "i32" ["K"] "input"
    design.tensor "b" : "i32" ["K"] "input"
    design.tensor "s" : "i32" ["1"] "output"
    design.stmt "s" ["z"] "+=" {
      %0 = design.read "a" ["k"] : i32
      %1 = design.read "b" ["k"] : i32
      %2 = arith.muli %0, %1 : i32
      design.yield %2 : i32
    }
  }
}

// CHECK:      func.func @dot(
// CHECK-SAME:   %s: memref<?xi32> {irkit.name = "s", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (1)>}
// CHECK-NEXT:   tensorop.fill %s : memref<?xi32> sizes(%K) {value = 0 : i32, stage = "s"}
// CHECK-NEXT:   tensorop.generic ins(%a, %b : memref<?xi32>, memref<?xi32>) outs(%s : memref<?xi32>) sizes(%K) attributes {stage = "s", loop_names = ["z", "k"], domain = affine_map<()[s0] -> (1, s0)>, indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0)>], iterators = ["parallel", "reduction"]} {
// CHECK-NEXT:   ^bb0(%[[A:.*]]: i32, %[[B:.*]]: i32, %[[S:.*]]: i32):
// CHECK-NEXT:     %[[P:.*]] = arith.muli %[[A]], %[[B]] : i32
// CHECK-NEXT:     %[[R:.*]] = arith.addi %[[S]], %[[P]] : i32
// CHECK-NEXT:     tensorop.yield %[[R]] : i32
// CHECK-NEXT:   }
