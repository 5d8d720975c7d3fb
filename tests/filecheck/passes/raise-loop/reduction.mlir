// A reduction with its initialisation: the store of the combiner's identity
// becomes a fill, the store of `combine(element, value)` over a loop that
// does not index the element a generic with a reduction iterator (its body
// ends with the combiner applied to the output argument).  A plain sum or
// maximum of one input is tensorop's reduce.  raise-tensorop prints them
// back as `+=` / `max=` statements.
// RUN: irkit-opt %s --split-input-file -p raise-loop | filecheck %s
// RUN: irkit-opt %s --split-input-file -p raise-loop,raise-tensorop --emit design | filecheck %s --check-prefix=DESIGN

func.func @sumsq(%M: index {irkit.name = "M"}, %N: index {irkit.name = "N"},
                 %X: memref<?x?xf32> {irkit.name = "X", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>},
                 %s: memref<?xf32> {irkit.name = "s", irkit.role = "output", irkit.shape = affine_map<()[s0, s1] -> (s0)>}) {
  loop.for %d0 = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "d0", stage = "s"} {
    %zero = arith.constant 0.0 : f32
    loop.store %zero, %s[affine_map<(d0) -> (d0)>] (%d0) : f32, memref<?xf32>
  }
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "s"} {
    loop.for %j = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", stage = "s"} {
      %x = loop.load %X[affine_map<(d0, d1) -> (d0, d1)>] (%i, %j) : memref<?x?xf32> -> f32
      %acc = loop.load %s[affine_map<(d0, d1) -> (d0)>] (%i, %j) : memref<?xf32> -> f32
      %sq = arith.mulf %x, %x : f32
      %r = arith.addf %acc, %sq : f32
      loop.store %r, %s[affine_map<(d0, d1) -> (d0)>] (%i, %j) : f32, memref<?xf32>
    }
  }
  func.return
}

// CHECK:      tensorop.fill %[[S:[^ ]+]] : memref<?xf32> sizes(%{{.+}}, %{{.+}}) {value = 0.000000e+00 : f32, stage = "s"}
// CHECK-NEXT: tensorop.generic ins(%{{.+}} : memref<?x?xf32>) outs(%[[S]] : memref<?xf32>) sizes(%{{.+}}, %{{.+}}) attributes {stage = "s", loop_names = ["i", "j"], domain = affine_map<()[s0, s1] -> (s0, s1)>, indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterators = ["parallel", "reduction"]{{.*}}} {
// CHECK-NEXT: ^bb0(%[[X:[^:]+]]: f32, %[[OUT:[^:]+]]: f32):
// CHECK-NEXT:   %[[SQ:.+]] = arith.mulf %[[X]], %[[X]] : f32
// CHECK-NEXT:   %[[R:.+]] = arith.addf %[[OUT]], %[[SQ]] : f32
// CHECK-NEXT:   tensorop.yield %[[R]] : f32

// DESIGN:      s[i] += X[i, j] * X[i, j]
// DESIGN-NOT:  schedule

// -----

func.func @rowmax(%M: index {irkit.name = "M"}, %N: index {irkit.name = "N"},
                  %X: memref<?x?xf32> {irkit.name = "X", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>},
                  %m: memref<?xf32> {irkit.name = "m", irkit.role = "output", irkit.shape = affine_map<()[s0, s1] -> (s0)>}) {
  loop.for %d0 = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "d0", stage = "m"} {
    %ninf = arith.constant 0xff800000 : f32
    loop.store %ninf, %m[affine_map<(d0) -> (d0)>] (%d0) : f32, memref<?xf32>
  }
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "m"} {
    loop.for %j = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", stage = "m", vector = 8 : i64} {
      %x = loop.load %X[affine_map<(d0, d1) -> (d0, d1)>] (%i, %j) : memref<?x?xf32> -> f32
      %acc = loop.load %m[affine_map<(d0, d1) -> (d0)>] (%i, %j) : memref<?xf32> -> f32
      %r = arith.maximumf %acc, %x : f32
      loop.store %r, %m[affine_map<(d0, d1) -> (d0)>] (%i, %j) : f32, memref<?xf32>
    }
  }
  func.return
}

// CHECK-LABEL: func.func @rowmax
// CHECK-NEXT:  tensorop.reduce ins(%{{.+}} : memref<?x?xf32>) outs(%{{.+}} : memref<?xf32>) sizes(%{{.+}}, %{{.+}}) {stage = "m", loop_names = ["i", "j"], domain = affine_map<()[s0, s1] -> (s0, s1)>, params = {dims = [1 : i64], kind = "max"}, schedule = [{kind = "vectorize", loop = "j", width = 8 : i64}]}
// CHECK-NEXT:  func.return

// DESIGN:      m[i] max= X[i, j]
// DESIGN:      schedule m {
// DESIGN-NEXT:   vectorize j by 8
// DESIGN-NEXT: }
