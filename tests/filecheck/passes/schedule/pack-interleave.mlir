// schedule-pack after `unroll_jam ii by 4`: the rows of A that a block of 4 copies reads are
// interleaved ([ii block][k][row in block]: the unit digit of a dimension
// whose loads differ by constants goes innermost), so the copies read 4
// adjacent values per k.  The main loop's loads step exactly through the
// layout (linear address); the remainder loop's go through the general
// floordiv form of the same layout.  io is parallel, so the buffer is
// private to its iterations: allocated at the start of its body.
// RUN: irkit-opt %s -p 'schedule-unroll-jam{stage=C loop=ii factor=4},schedule-pack{stage=C tensor=A loop=io loc="x.design:10:5"}' | filecheck %s

func.func @gemm(%M: index {irkit.name = "M"}, %K: index {irkit.name = "K"},
    %A: memref<?x?xf32> {irkit.name = "A", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>},
    %B: memref<?x?xf32> {irkit.name = "B", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> (s1, 16)>},
    %C: memref<?x?xf32> {irkit.name = "C", irkit.role = "output", irkit.shape = affine_map<()[s0, s1] -> (s0, 16)>}) {
  loop.for %ko = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%K) step 32 {loop_name = "ko", stage = "C"} {
  loop.for %io = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 8 {loop_name = "io", stage = "C", parallel} {
    loop.for %ii = affine_map<(d0) -> (d0)>(%io) to affine_map<(d0, d1) -> (d0 + 8, d1)>(%io, %M) step 1 {loop_name = "ii", stage = "C"} {
      loop.for %k = affine_map<(d0) -> (d0)>(%ko) to affine_map<(d0, d1) -> (d0 + 32, d1)>(%ko, %K) step 1 {loop_name = "k", stage = "C"} {
        loop.for %j = affine_map<() -> (0)>() to affine_map<() -> (16)>() step 1 {loop_name = "j", stage = "C", vector = 8 : i64} {
          %a = loop.load %A[affine_map<(d0, d1, d2) -> (d0, d2)>] (%ii, %j, %k) : memref<?x?xf32> -> f32
          %b = loop.load %B[affine_map<(d0, d1, d2) -> (d2, d1)>] (%ii, %j, %k) : memref<?x?xf32> -> f32
          %c = loop.load %C[affine_map<(d0, d1, d2) -> (d0, d1)>] (%ii, %j, %k) : memref<?x?xf32> -> f32
          %p = arith.mulf %a, %b : f32
          %s = arith.addf %c, %p : f32
          loop.store %s, %C[affine_map<(d0, d1, d2) -> (d0, d1)>] (%ii, %j, %k) : f32, memref<?x?xf32>
        }
      }
    }
  }
  }
  func.return
}

// CHECK:      loop.for %io = {{.*}} {loop_name = "io", stage = "C", parallel} {
// CHECK-NEXT:   %A_pack = loop.alloc() {tensor_name = "A_pack", shape = affine_map<() -> (256)>, align = 64 : i64} : memref<256xf32>
// CHECK-NEXT:   loop.for %A_p0 = affine_map<() -> (0)>() to affine_map<(d0, d1) -> (2, ((d0 + (d1 * -1)) ceildiv 4))>(%M, %io) step 1
// CHECK-NEXT:     loop.for %A_p1 = affine_map<() -> (0)>() to affine_map<(d0, d1) -> (32, (d0 + (d1 * -1)))>(%K, %ko) step 1
// CHECK-NEXT:       loop.for %A_p2 = affine_map<() -> (0)>() to affine_map<(d0, d1, d2) -> (4, ((d0 + (d1 * -1)) + (d2 * -4)))>(%M, %io, %A_p0) step 1
// CHECK-NEXT:         %A_v = loop.load %A[affine_map<(d0, d1, d2, d3, d4) -> (((d0 + (d1 * 4)) + d2), (d3 + d4))>] (%io, %A_p0, %A_p2, %ko, %A_p1)
// CHECK-NEXT:         loop.store %A_v, %A_pack[affine_map<(d0, d1, d2) -> ((((d0 * 128) + (d1 * 4)) + d2))>] (%A_p0, %A_p1, %A_p2)
// CHECK:        loop.for %ii = affine_map<(d0) -> (d0)>(%io) to affine_map<(d0, d1) -> ((d0 + 5), (d1 + -3))>(%io, %M) step 4
// CHECK:            %a = loop.load %A_pack[affine_map<(d0, d1, d2, d3, d4) -> (((((d0 * 32) + (d2 * 4)) + (d3 * -32)) + (d4 * -4)))>] (%ii, %{{.*}}, %k, %io, %ko)
// CHECK:            %a_1 = loop.load %A_pack[affine_map<(d0, d1, d2, d3, d4) -> ((((((d0 * 32) + (d2 * 4)) + (d3 * -32)) + (d4 * -4)) + 1))>] (%ii, %{{.*}}, %k, %io, %ko)
// CHECK:            %a_3 = loop.load %A_pack[{{.*}} + 3))>] (%ii,
// CHECK:        loop.for %ii_tail =
// CHECK:            %{{.*}} = loop.load %A_pack[affine_map<(d0, d1, d2, d3, d4) -> (((((d0 + (d2 * 4)) + (d3 * -1)) + (d4 * -4)) + (((d0 + (d3 * -1)) floordiv 4) * 124)))>] (%ii_tail,
// CHECK:        loop.free %A_pack : memref<256xf32>
// CHECK-NEXT: }
