// schedule-pack: `pack B at ko` copies the tile of B that one iteration of ko
// reads (k in [ko, ko + 64), jv in [jr, jr + 16)) into a contiguous buffer in
// the order the loops inside ko traverse it ([k][j]), clipped to B's shape,
// and the loads read the buffer at the matching linear address.  No parallel
// loop around ko: the buffer is allocated once before the nest and freed
// after it.
// RUN: irkit-opt %s --split-input-file -p 'schedule-pack{stage=C tensor=B loop=ko loc="x.design:10:5"}' | filecheck %s
// RUN: irkit-opt %s --split-input-file -p 'schedule-pack{stage=C tensor=B loop=ko}' | irkit-opt --split-input-file | filecheck %s --check-prefix=RT

func.func @gemm(%M: index {irkit.name = "M"}, %N: index {irkit.name = "N"}, %K: index {irkit.name = "K"},
    %A: memref<?x?xf32> {irkit.name = "A", irkit.role = "input", irkit.shape = affine_map<()[s0, s1, s2] -> (s0, s2)>},
    %B: memref<?x?xf32> {irkit.name = "B", irkit.role = "input", irkit.shape = affine_map<()[s0, s1, s2] -> (s2, s1)>},
    %C: memref<?x?xf32> {irkit.name = "C", irkit.role = "output", irkit.shape = affine_map<()[s0, s1, s2] -> (s0, s1)>}) {
  loop.for %jr = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 16 {loop_name = "jr", stage = "C"} {
    loop.for %ko = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%K) step 64 {loop_name = "ko", stage = "C"} {
      loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "C"} {
        loop.for %k = affine_map<(d0) -> (d0)>(%ko) to affine_map<(d0, d1) -> (d0 + 64, d1)>(%ko, %K) step 1 {loop_name = "k", stage = "C"} {
          loop.for %jv = affine_map<(d0) -> (d0)>(%jr) to affine_map<(d0, d1) -> (d0 + 16, d1)>(%jr, %N) step 1 {loop_name = "jv", stage = "C", vector = 8 : i64} {
            %a = loop.load %A[affine_map<(d0, d1, d2) -> (d0, d2)>] (%i, %jv, %k) : memref<?x?xf32> -> f32
            %b = loop.load %B[affine_map<(d0, d1, d2) -> (d2, d1)>] (%i, %jv, %k) : memref<?x?xf32> -> f32
            %c = loop.load %C[affine_map<(d0, d1, d2) -> (d0, d1)>] (%i, %jv, %k) : memref<?x?xf32> -> f32
            %p = arith.mulf %a, %b : f32
            %s = arith.addf %c, %p : f32
            loop.store %s, %C[affine_map<(d0, d1, d2) -> (d0, d1)>] (%i, %jv, %k) : f32, memref<?x?xf32>
          }
        }
      }
    }
  }
  func.return
}

// CHECK:      %B_pack = loop.alloc() {tensor_name = "B_pack", shape = affine_map<() -> (1024)>, align = 64 : i64} : memref<1024xf32>
// CHECK-NEXT: loop.for %jr =
// CHECK-NEXT:   loop.for %ko =
// CHECK-NEXT:     loop.for %B_p0 = affine_map<() -> (0)>() to affine_map<(d0, d1) -> (64, (d0 + (d1 * -1)))>(%K, %ko) step 1 {loop_name = "B_p0", stage = "C", origin = "x.design:10:5"} {
// CHECK-NEXT:       loop.for %B_p1 = affine_map<() -> (0)>() to affine_map<(d0, d1) -> (16, (d0 + (d1 * -1)))>(%N, %jr) step 1 {loop_name = "B_p1", stage = "C", origin = "x.design:10:5"} {
// CHECK-NEXT:         %B_v = loop.load %B[affine_map<(d0, d1, d2, d3) -> ((d0 + d1), (d2 + d3))>] (%ko, %B_p0, %jr, %B_p1) : memref<?x?xf32> -> f32
// CHECK-NEXT:         loop.store %B_v, %B_pack[affine_map<(d0, d1) -> (((d0 * 16) + d1))>] (%B_p0, %B_p1) : f32, memref<1024xf32>
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     loop.for %i =
// CHECK-NEXT:       loop.for %k =
// CHECK-NEXT:         loop.for %jv =
// CHECK-NEXT:           %a = loop.load %A[affine_map<(d0, d1, d2) -> (d0, d2)>] (%i, %jv, %k)
// CHECK-NEXT:           %b = loop.load %B_pack[affine_map<(d0, d1, d2, d3, d4) -> ((((d1 + (d2 * 16)) + (d3 * -16)) + (d4 * -1)))>] (%i, %jv, %k, %ko, %jr) : memref<1024xf32> -> f32
// CHECK:      loop.free %B_pack : memref<1024xf32>
// CHECK-NEXT: func.return
// RT:         %B_pack = loop.alloc() {tensor_name = "B_pack", shape = affine_map<() -> (1024)>, align = 64 : i64} : memref<1024xf32>
