// A stencil: offsets in the indices become offsets in the indexing maps,
// the loops range over the output, and the statement's location travels
// to the generic.
// RUN: irkit-opt %s -p lower-design | filecheck %s
// RUN: irkit-opt %s -p lower-design --print-debuginfo | filecheck %s --check-prefix=LOC

builtin.module {
  design.design "smooth" {
    design.size "N" = 1024
    design.tensor "a" : "f64" ["N + 2"] "input"
    design.tensor "b" : "f64" ["N"] "output"
    design.stmt "b" ["i"] "=" {
      %0 = design.read "a" ["i"] : f64
      %1 = design.read "a" ["i + 1"] : f64
      %2 = design.read "a" ["i + 2"] : f64
      %3 = arith.addf %0, %1 : f64
      %4 = arith.addf %3, %2 : f64
      design.yield %4 : f64
    } loc("smooth.design":4:3)
  } loc("smooth.design":1:1)
}

// CHECK:      func.func @smooth(%N: index {irkit.name = "N", irkit.default = 1024 : i64}, %a: memref<?xf64> {irkit.name = "a", irkit.role = "input", irkit.shape = affine_map<()[s0] -> ((s0 + 2))>}, %b: memref<?xf64> {irkit.name = "b", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>})
// CHECK-NEXT:   tensorop.generic ins(%a, %a, %a : memref<?xf64>, memref<?xf64>, memref<?xf64>) outs(%b : memref<?xf64>) sizes(%N) attributes {stage = "b", loop_names = ["i"], domain = affine_map<()[s0] -> (s0)>, indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ((d0 + 1))>, affine_map<(d0) -> ((d0 + 2))>, affine_map<(d0) -> (d0)>], iterators = ["parallel"]} {
// CHECK-NEXT:   ^bb0(%[[A0:.*]]: f64, %[[A1:.*]]: f64, %[[A2:.*]]: f64, %{{.*}}: f64):
// CHECK-NEXT:     %[[S:.*]] = arith.addf %[[A0]], %[[A1]] : f64
// CHECK-NEXT:     %[[T:.*]] = arith.addf %[[S]], %[[A2]] : f64
// CHECK-NEXT:     tensorop.yield %[[T]] : f64
// CHECK-NEXT:   }
// CHECK-NEXT:   func.return
// CHECK-NOT:  tensorop.fill

// LOC:      tensorop.yield %{{.*}} : f64 loc("smooth.design":4:3)
// LOC-NEXT: } loc("smooth.design":4:3)
// LOC:      } loc("smooth.design":1:1)
