// A temporary computed per tile of its consumer (compute_at): allocated inside
// the consumer's tile loop, written at indices relative to the tile
// (`t[i - io]`) over a window of the tile plus its halo.  raise-loop adds the
// tile's origin back to every access, so the temporary comes back whole
// (`tensorop.alloc`, shape N + 1: the window's size-only bound), the stages
// read and write it at plain indices, and the producer's schedule says where
// it was computed.
// RUN: irkit-opt %s -p raise-loop | filecheck %s
// RUN: irkit-opt %s -p raise-loop,raise-tensorop --emit design | filecheck %s --check-prefix=DESIGN

func.func @st(%N: index {irkit.name = "N"},
              %x: memref<?xf32> {irkit.name = "x", irkit.role = "input", irkit.shape = affine_map<()[s0] -> ((s0 + 2))>},
              %y: memref<?xf32> {irkit.name = "y", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}) {
  loop.for %io = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 16 {loop_name = "io", stage = "y", parallel} {
    %t = loop.alloc() {tensor_name = "t", shape = affine_map<() -> (17)>} : memref<?xf32>
    loop.for %i = affine_map<(d0) -> (d0)>(%io) to affine_map<(d0, d1) -> ((d0 + 1), (d1 + 17))>(%N, %io) step 1 {loop_name = "i", stage = "t"} {
      %x_1 = loop.load %x[affine_map<(d0) -> (d0)>] (%i) : memref<?xf32> -> f32
      %x_2 = loop.load %x[affine_map<(d0) -> ((d0 + 1))>] (%i) : memref<?xf32> -> f32
      %0 = arith.addf %x_1, %x_2 : f32
      loop.store %0, %t[affine_map<(d0, d1) -> ((d0 + (d1 * -1)))>] (%i, %io) : f32, memref<?xf32>
    }
    loop.for %ii = affine_map<(d0) -> (d0)>(%io) to affine_map<(d0, d1) -> ((d0 + 16), d1)>(%io, %N) step 1 {loop_name = "ii", stage = "y"} {
      %t_1 = loop.load %t[affine_map<(d0, d1) -> ((d0 + (d1 * -1)))>] (%ii, %io) : memref<?xf32> -> f32
      %t_2 = loop.load %t[affine_map<(d0, d1) -> (((d0 + (d1 * -1)) + 1))>] (%ii, %io) : memref<?xf32> -> f32
      %1 = arith.subf %t_1, %t_2 : f32
      loop.store %1, %y[affine_map<(d0) -> (d0)>] (%ii) : f32, memref<?xf32>
    }
    loop.free %t : memref<?xf32>
  }
  func.return
}

// CHECK:      %[[T:.+]] = tensorop.alloc(%{{.+}}) {tensor_name = "t", shape = affine_map<()[s0] -> ((s0 + 1))>} : memref<?xf32>
// CHECK-NEXT: tensorop.generic ins(%{{.+}}, %{{.+}} : memref<?xf32>, memref<?xf32>) outs(%[[T]] : memref<?xf32>) sizes(%{{.+}}) attributes {stage = "t", loop_names = ["i"], domain = affine_map<()[s0] -> ((s0 + 1))>, indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ((d0 + 1))>, affine_map<(d0) -> (d0)>], iterators = ["parallel"], schedule = [{kind = "compute_at", stage = "y", loop = "io"}]} {
// CHECK:        arith.addf
// CHECK:      tensorop.generic ins(%[[T]], %[[T]] : memref<?xf32>, memref<?xf32>) outs(%{{.+}} : memref<?xf32>) sizes(%{{.+}}) attributes {stage = "y", loop_names = ["i"], domain = affine_map<()[s0] -> (s0)>, indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ((d0 + 1))>, affine_map<(d0) -> (d0)>], iterators = ["parallel"], schedule = [{kind = "split", loop = "i", factor = 16 : i64, outer = "io", inner = "ii"}, {kind = "parallel", loop = "io"}]} {
// CHECK:        arith.subf
// CHECK-NOT:  loop.

// DESIGN:      design st {
// DESIGN:        tensor x : f32[N + 2] input
// DESIGN-NEXT:   tensor t : f32[N + 1] temp
// DESIGN-NEXT:   tensor y : f32[N] output
// DESIGN-EMPTY:
// DESIGN-NEXT:   t[i] = x[i] + x[i + 1]
// DESIGN-NEXT:   y[i] = t[i] - t[i + 1]
// DESIGN:        layout {
// DESIGN-NEXT:     x : row_major
// DESIGN-NEXT:     t : row_major
// DESIGN-NEXT:     y : row_major
// DESIGN-NEXT:   }
// DESIGN-EMPTY:
// DESIGN-NEXT:   schedule y {
// DESIGN-NEXT:     split i by 16 -> io, ii
// DESIGN-NEXT:     parallel io
// DESIGN-NEXT:   }
// DESIGN-NEXT:   schedule t {
// DESIGN-NEXT:     compute_at y.io
// DESIGN-NEXT:   }
// DESIGN-NEXT: }
