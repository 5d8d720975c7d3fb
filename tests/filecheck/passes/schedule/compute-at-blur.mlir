// compute_at of the blur's horizontal pass `bx` into the tiled vertical pass
// `out` (32 x 256 tiles, rows of tiles parallel).  bx's nest moves into the
// consumer loop and is cut to the footprint of the tile: rows
// [yo, min(yo + 34, H + 2)) (the halo of 2 is recomputed by every tile),
// columns [xo, min(xo + 256, W)).  Because `yo` is parallel, bx becomes a
// tile buffer private to yo's iterations (allocated and freed inside yo),
// indexed relative to the tile's origin; its vectorize fact is kept.
// RUN: irkit-opt %s -p 'schedule-compute-at{stage=bx at=out loop=xo}' | filecheck %s --check-prefix=XO
// RUN: irkit-opt %s -p 'schedule-compute-at{stage=bx at=out loop=xo}' | irkit-opt | filecheck %s --check-prefix=XO
// At yo, the footprint spans every column: a 34 x W buffer.
// RUN: irkit-opt %s -p 'schedule-compute-at{stage=bx at=out loop=yo}' | filecheck %s --check-prefix=YO
// A split producer: its block loop restarts at the tile (no empty blocks).
// RUN: irkit-opt %s -p 'schedule-split{stage=bx loop=x factor=16 outer=xo inner=xi},schedule-compute-at{stage=bx at=out loop=xo}' | filecheck %s --check-prefix=SPLIT

func.func @blur(%H: index {irkit.name = "H"}, %W: index {irkit.name = "W"},
    %inp: memref<?x?xf32> {irkit.name = "inp", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> ((s0 + 2), (s1 + 2))>},
    %out: memref<?x?xf32> {irkit.name = "out", irkit.role = "output", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>}) {
  %bx = loop.alloc(%H, %W) {tensor_name = "bx", shape = affine_map<()[s0, s1] -> ((s0 + 2), s1)>} : memref<?x?xf32>
  loop.for %y = affine_map<() -> (0)>() to affine_map<(d0) -> ((d0 + 2))>(%H) step 1 {loop_name = "y", stage = "bx"} {
    loop.for %x = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%W) step 1 {loop_name = "x", stage = "bx", vector = 16 : i64} {
      %a = loop.load %inp[affine_map<(d0, d1) -> (d0, d1)>] (%y, %x) : memref<?x?xf32> -> f32
      %b = loop.load %inp[affine_map<(d0, d1) -> (d0, (d1 + 2))>] (%y, %x) : memref<?x?xf32> -> f32
      %s = arith.addf %a, %b : f32
      loop.store %s, %bx[affine_map<(d0, d1) -> (d0, d1)>] (%y, %x) : f32, memref<?x?xf32>
    }
  }
  loop.for %yo = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%H) step 32 {loop_name = "yo", stage = "out", parallel} {
    loop.for %xo = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%W) step 256 {loop_name = "xo", stage = "out"} {
      loop.for %yi = affine_map<(d0) -> (d0)>(%yo) to affine_map<(d0, d1) -> ((d0 + 32), d1)>(%yo, %H) step 1 {loop_name = "yi", stage = "out"} {
        loop.for %xi = affine_map<(d0) -> (d0)>(%xo) to affine_map<(d0, d1) -> ((d0 + 256), d1)>(%xo, %W) step 1 {loop_name = "xi", stage = "out", vector = 16 : i64} {
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

// XO:      func.func @blur
// XO-NEXT:   loop.for %[[TY:.*]] = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%H) step 32 {loop_name = "yo", stage = "out", parallel} {
// XO-NEXT:     %[[BX:.*]] = loop.alloc() {tensor_name = "bx", shape = affine_map<() -> (34, 256)>} : memref<?x?xf32>
// XO-NEXT:     loop.for %[[TX:.*]] = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%W) step 256 {loop_name = "xo", stage = "out"} {
// XO-NEXT:       loop.for %[[Y:.*]] = affine_map<(d0) -> (d0)>(%[[TY]]) to affine_map<(d0, d1) -> ((d0 + 2), (d1 + 34))>(%H, %[[TY]]) step 1 {loop_name = "y", stage = "bx"} {
// XO-NEXT:         loop.for %[[X:.*]] = affine_map<(d0) -> (d0)>(%[[TX]]) to affine_map<(d0, d1) -> (d0, (d1 + 256))>(%W, %[[TX]]) step 1 {loop_name = "x", stage = "bx", vector = 16 : i64} {
// XO-NEXT:           %{{.*}} = loop.load %inp[affine_map<(d0, d1) -> (d0, d1)>] (%[[Y]], %[[X]])
// XO-NEXT:           %{{.*}} = loop.load %inp[affine_map<(d0, d1) -> (d0, (d1 + 2))>] (%[[Y]], %[[X]])
// XO-NEXT:           %{{.*}} = arith.addf
// XO-NEXT:           loop.store %{{.*}}, %[[BX]][affine_map<(d0, d1, d2, d3) -> ((d0 + (d2 * -1)), (d1 + (d3 * -1)))>] (%[[Y]], %[[X]], %[[TY]], %[[TX]])
// XO-NEXT:         }
// XO-NEXT:       }
// XO-NEXT:       loop.for %[[YI:.*]] = affine_map<(d0) -> (d0)>(%[[TY]]) to affine_map<(d0, d1) -> ((d0 + 32), d1)>(%[[TY]], %H) step 1 {loop_name = "yi", stage = "out"} {
// XO-NEXT:         loop.for %[[XI:.*]] = affine_map<(d0) -> (d0)>(%[[TX]]) to
// XO-NEXT:           %{{.*}} = loop.load %[[BX]][affine_map<(d0, d1, d2, d3) -> ((d0 + (d2 * -1)), (d1 + (d3 * -1)))>] (%[[YI]], %[[XI]], %[[TY]], %[[TX]])
// XO-NEXT:           %{{.*}} = loop.load %[[BX]][affine_map<(d0, d1, d2, d3) -> (((d0 + (d2 * -1)) + 2), (d1 + (d3 * -1)))>] (%[[YI]], %[[XI]], %[[TY]], %[[TX]])
// XO:              loop.store %{{.*}}, %out
// XO-NEXT:         }
// XO-NEXT:       }
// XO-NEXT:     }
// XO-NEXT:     loop.free %[[BX]] : memref<?x?xf32>
// XO-NEXT:   }
// XO-NEXT:   func.return

// YO:      loop.for %[[TY:.*]] = {{.*}} {loop_name = "yo", stage = "out", parallel} {
// YO-NEXT:   %[[BX:.*]] = loop.alloc(%W) {tensor_name = "bx", shape = affine_map<()[s0] -> (34, s0)>} : memref<?x?xf32>
// YO-NEXT:   loop.for %[[Y:.*]] = affine_map<(d0) -> (d0)>(%[[TY]]) to affine_map<(d0, d1) -> ((d0 + 2), (d1 + 34))>(%H, %[[TY]]) step 1 {loop_name = "y", stage = "bx"} {
// YO-NEXT:     loop.for %[[X:.*]] = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%W) step 1 {loop_name = "x", stage = "bx", vector = 16 : i64} {
// YO:            loop.store %{{.*}}, %[[BX]][affine_map<(d0, d1, d2) -> ((d0 + (d2 * -1)), d1)>] (%[[Y]], %[[X]], %[[TY]])
// YO:        loop.for %{{.*}} {loop_name = "xo", stage = "out"} {
// YO:          loop.load %[[BX]][affine_map<(d0, d1, d2) -> ((d0 + (d2 * -1)), d1)>] (%{{.*}}, %{{.*}}, %[[TY]])
// YO:        loop.free %[[BX]]
// YO-NOT:  loop.alloc
// YO-NOT:  loop.free

// SPLIT:      loop.for %[[TX:.*]] = {{.*}} step 256 {loop_name = "xo", stage = "out"} {
// SPLIT-NEXT:   loop.for %[[Y:.*]] = {{.*}} {loop_name = "y", stage = "bx"} {
// SPLIT-NEXT:     loop.for %[[XB:.*]] = affine_map<(d0) -> (d0)>(%[[TX]]) to affine_map<(d0, d1) -> (d0, (d1 + 256))>(%W, %[[TX]]) step 16 {loop_name = "xo", stage = "bx"} {
// SPLIT-NEXT:       loop.for %[[X:.*]] = affine_map<(d0) -> (d0)>(%[[XB]]) to affine_map<(d0, d1, d2) -> ((d0 + 16), d1, (d2 + 256))>(%[[XB]], %W, %[[TX]]) step 1 {loop_name = "xi", stage = "bx", vector = 16 : i64} {
