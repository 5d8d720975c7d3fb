// raise-loop undoes splits and tiles: a loop of step F whose variable is the
// lower bound of an inner loop running [T, min(T + F, size)) walks the same
// dimension as that inner loop.  The schedule the loops implement comes back
// as the generic's `schedule`: split (tile, when two split dimensions nest
// outer, outer, inner, inner), reorder when the nesting differs from the
// order the splits leave, and the parallel, unroll and vector marks.
// RUN: irkit-opt %s --split-input-file -p raise-loop | filecheck %s

func.func @rowsum(%M: index {irkit.name = "M"}, %N: index {irkit.name = "N"},
                  %X: memref<?x?xf32> {irkit.name = "X", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>},
                  %s: memref<?xf32> {irkit.name = "s", irkit.role = "output", irkit.shape = affine_map<()[s0, s1] -> (s0)>}) {
  loop.for %d0 = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "d0", stage = "s"} {
    %zero = arith.constant 0.0 : f32
    loop.store %zero, %s[affine_map<(d0) -> (d0)>] (%d0) : f32, memref<?xf32>
  }
  loop.for %io = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 32 {loop_name = "io", stage = "s", parallel} {
    loop.for %ii = affine_map<(d0) -> (d0)>(%io) to affine_map<(d0, d1) -> ((d0 + 32), d1)>(%io, %M) step 1 {loop_name = "ii", stage = "s"} {
      loop.for %j = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", stage = "s", vector = 16 : i64} {
        %x = loop.load %X[affine_map<(d0, d1) -> (d0, d1)>] (%ii, %j) : memref<?x?xf32> -> f32
        %acc = loop.load %s[affine_map<(d0, d1) -> (d0)>] (%ii, %j) : memref<?xf32> -> f32
        %r = arith.addf %acc, %x : f32
        loop.store %r, %s[affine_map<(d0, d1) -> (d0)>] (%ii, %j) : f32, memref<?xf32>
      }
    }
  }
  func.return
}

// A sum with its initialisation is tensorop's reduce (see reduction.mlir).
// CHECK:      tensorop.reduce ins(%{{.+}} : memref<?x?xf32>) outs(%{{.+}} : memref<?xf32>) sizes(%{{.+}}, %{{.+}}) {stage = "s", loop_names = ["i", "j"], domain = affine_map<()[s0, s1] -> (s0, s1)>, params = {dims = [1 : i64], kind = "add"}, schedule = [{kind = "split", loop = "i", factor = 32 : i64, outer = "io", inner = "ii"}, {kind = "parallel", loop = "io"}, {kind = "vectorize", loop = "j", width = 16 : i64}]}
// CHECK-NOT:  loop.

// -----

// Both dimensions split and nested outer, outer, inner, inner: a tile.
func.func @transpose(%M: index {irkit.name = "M"}, %N: index {irkit.name = "N"},
                     %A: memref<?x?xf32> {irkit.name = "A", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>},
                     %B: memref<?x?xf32> {irkit.name = "B", irkit.role = "output", irkit.shape = affine_map<()[s0, s1] -> (s1, s0)>}) {
  loop.for %io = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 32 {loop_name = "io", stage = "B"} {
    loop.for %jo = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 8 {loop_name = "jo", stage = "B"} {
      loop.for %ii = affine_map<(d0) -> (d0)>(%io) to affine_map<(d0, d1) -> ((d0 + 32), d1)>(%io, %N) step 1 {loop_name = "ii", stage = "B", unroll = 4 : i64} {
        loop.for %ji = affine_map<(d0) -> (d0)>(%jo) to affine_map<(d0, d1) -> ((d0 + 8), d1)>(%jo, %M) step 1 {loop_name = "ji", stage = "B"} {
          %a = loop.load %A[affine_map<(d0, d1) -> (d1, d0)>] (%ii, %ji) : memref<?x?xf32> -> f32
          loop.store %a, %B[affine_map<(d0, d1) -> (d0, d1)>] (%ii, %ji) : f32, memref<?x?xf32>
        }
      }
    }
  }
  func.return
}

// CHECK-LABEL: func.func @transpose
// CHECK:       tensorop.generic {{.*}} attributes {stage = "B", loop_names = ["i", "j"], domain = affine_map<()[s0, s1] -> (s1, s0)>, indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterators = ["parallel", "parallel"], schedule = [{kind = "tile", loops = ["i", "j"], factors = array<i64: 32, 8>, outer = ["io", "jo"], inner = ["ii", "ji"]}, {kind = "unroll", loop = "ii", factor = 4 : i64}]} {

// -----

// The inner loop walks the dimension in reverse nesting: a reorder.
func.func @interchanged(%M: index {irkit.name = "M"}, %N: index {irkit.name = "N"},
                        %A: memref<?x?xf32> {irkit.name = "A", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>},
                        %B: memref<?x?xf32> {irkit.name = "B", irkit.role = "output", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>}) {
  loop.for %j = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", stage = "B", parallel} {
    loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "B"} {
      %a = loop.load %A[affine_map<(d0, d1) -> (d0, d1)>] (%i, %j) : memref<?x?xf32> -> f32
      %c = arith.constant 2.0 : f32
      %n = arith.mulf %a, %c : f32
      loop.store %n, %B[affine_map<(d0, d1) -> (d0, d1)>] (%i, %j) : f32, memref<?x?xf32>
    }
  }
  func.return
}

// CHECK-LABEL: func.func @interchanged
// CHECK:       tensorop.generic {{.*}} loop_names = ["i", "j"], domain = affine_map<()[s0, s1] -> (s0, s1)>, indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterators = ["parallel", "parallel"], schedule = [{kind = "reorder", loops = ["j", "i"]}, {kind = "parallel", loop = "j"}]} {
// CHECK-NEXT:  ^bb0(%[[A:[^:]+]]: f32, %{{[^:]+}}: f32):
// CHECK-NEXT:    %[[C:.+]] = arith.constant 2.000000e+00 : f32
// CHECK-NEXT:    arith.mulf %[[A]], %[[C]] : f32
