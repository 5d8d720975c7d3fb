// Without a parallel loop around the consumer loop, the producer's buffer
// still shrinks to the tile (34 x 256, offsets yo and xo) but is allocated
// once, where the kernel allocated it, and freed where it was freed.
// RUN: irkit-opt %s -p 'schedule-compute-at{stage=bx at=out loop=xo}' | filecheck %s
// compute_root is the placement lower-tensorop made: nothing moves.
// RUN: irkit-opt %s -p 'schedule-compute-root{stage=bx}' | filecheck %s --check-prefix=ROOT

func.func @blur(%H: index {irkit.name = "H"}, %W: index {irkit.name = "W"},
    %inp: memref<?x?xf32> {irkit.name = "inp", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> ((s0 + 2), s1)>},
    %out: memref<?x?xf32> {irkit.name = "out", irkit.role = "output", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>}) {
  %bx = loop.alloc(%H, %W) {tensor_name = "bx", shape = affine_map<()[s0, s1] -> ((s0 + 2), s1)>, align = 64 : i64} : memref<?x?xf32>
  loop.for %y = affine_map<() -> (0)>() to affine_map<(d0) -> ((d0 + 2))>(%H) step 1 {loop_name = "y", stage = "bx"} {
    loop.for %x = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%W) step 1 {loop_name = "x", stage = "bx"} {
      %a = loop.load %inp[affine_map<(d0, d1) -> (d0, d1)>] (%y, %x) : memref<?x?xf32> -> f32
      loop.store %a, %bx[affine_map<(d0, d1) -> (d0, d1)>] (%y, %x) : f32, memref<?x?xf32>
    }
  }
  loop.for %yo = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%H) step 32 {loop_name = "yo", stage = "out"} {
    loop.for %xo = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%W) step 256 {loop_name = "xo", stage = "out"} {
      loop.for %yi = affine_map<(d0) -> (d0)>(%yo) to affine_map<(d0, d1) -> ((d0 + 32), d1)>(%yo, %H) step 1 {loop_name = "yi", stage = "out"} {
        loop.for %xi = affine_map<(d0) -> (d0)>(%xo) to affine_map<(d0, d1) -> ((d0 + 256), d1)>(%xo, %W) step 1 {loop_name = "xi", stage = "out"} {
          %c = loop.load %bx[affine_map<(d0, d1) -> (d0, d1)>] (%yi, %xi) : memref<?x?xf32> -> f32
          %d = loop.load %bx[affine_map<(d0, d1) -> ((d0 + 2), d1)>] (%yi, %xi) : memref<?x?xf32> -> f32
          %t = arith.addf %c, %d : f32
          loop.store %t, %out[affine_map<(d0, d1) -> (d0, d1)>] (%yi, %xi) : f32, memref<?x?xf32>
        }
      }
    }
  }
  loop.free %bx : memref<?x?xf32>
  func.return
}

// CHECK:      func.func @blur
// CHECK-NEXT:   %[[BX:.*]] = loop.alloc() {tensor_name = "bx", shape = affine_map<() -> (34, 256)>, align = 64 : i64} : memref<?x?xf32>
// CHECK-NEXT:   loop.for %[[TY:.*]] = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%H) step 32 {loop_name = "yo", stage = "out"} {
// CHECK-NEXT:     loop.for %[[TX:.*]] = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%W) step 256 {loop_name = "xo", stage = "out"} {
// CHECK-NEXT:       loop.for %[[Y:.*]] = affine_map<(d0) -> (d0)>(%[[TY]]) to affine_map<(d0, d1) -> ((d0 + 2), (d1 + 34))>(%H, %[[TY]]) step 1 {loop_name = "y", stage = "bx"} {
// CHECK-NEXT:         loop.for %[[X:.*]] = affine_map<(d0) -> (d0)>(%[[TX]]) to affine_map<(d0, d1) -> (d0, (d1 + 256))>(%W, %[[TX]]) step 1 {loop_name = "x", stage = "bx"} {
// CHECK-NEXT:           %{{.*}} = loop.load %inp
// CHECK-NEXT:           loop.store %{{.*}}, %[[BX]][affine_map<(d0, d1, d2, d3) -> ((d0 + (d2 * -1)), (d1 + (d3 * -1)))>] (%[[Y]], %[[X]], %[[TY]], %[[TX]])
// CHECK:          loop.load %[[BX]][affine_map<(d0, d1, d2, d3) -> (((d0 + (d2 * -1)) + 2), (d1 + (d3 * -1)))>]
// CHECK:        loop.free %[[BX]] : memref<?x?xf32>
// CHECK-NEXT:   func.return

// ROOT:      %[[BX:.*]] = loop.alloc(%H, %W) {tensor_name = "bx", shape = affine_map<()[s0, s1] -> ((s0 + 2), s1)>, align = 64 : i64}
// ROOT-NEXT: loop.for %{{.*}} {loop_name = "y", stage = "bx"} {
// ROOT:      loop.store %{{.*}}, %[[BX]][affine_map<(d0, d1) -> (d0, d1)>]
// ROOT:      loop.for %{{.*}} {loop_name = "yo", stage = "out"} {
// ROOT:      loop.load %[[BX]][affine_map<(d0, d1) -> (d0, d1)>]
