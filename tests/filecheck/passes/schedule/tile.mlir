// schedule-tile: split each tiled loop, then all the outer loops, then all
// the inner ones, at the position of the first tiled loop.  Loops between
// the tiled ones that are not tiled move inside the inner loops (a reorder,
// checked like one).
// RUN: irkit-opt %s --split-input-file -p 'schedule-tile{stage=C loops=i,j factors=4,8 loc="g.design:9:5"}' | filecheck %s
// RUN: irkit-opt %s --split-input-file -p 'schedule-tile{stage=C loops=i,k factors=4,3 outer=a,b inner=c,d}' | filecheck %s --check-prefix=IK

func.func @gemm(%M: index {irkit.name = "M"}, %N: index {irkit.name = "N"}, %K: index {irkit.name = "K"},
                %A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "C"} {
    loop.for %j = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", stage = "C"} {
      loop.for %k = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%K) step 1 {loop_name = "k", stage = "C"} {
        %a = loop.load %A[affine_map<(d0, d1, d2) -> (d0, d2)>] (%i, %j, %k) : memref<?x?xf32> -> f32
        %b = loop.load %B[affine_map<(d0, d1, d2) -> (d2, d1)>] (%i, %j, %k) : memref<?x?xf32> -> f32
        %c = loop.load %C[affine_map<(d0, d1, d2) -> (d0, d1)>] (%i, %j, %k) : memref<?x?xf32> -> f32
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %c, %p : f32
        loop.store %s, %C[affine_map<(d0, d1, d2) -> (d0, d1)>] (%i, %j, %k) : f32, memref<?x?xf32>
      }
    }
  }
  func.return
}

// CHECK:      loop.for %io = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 4 {loop_name = "io", stage = "C", origin = "g.design:9:5"} {
// CHECK-NEXT:   loop.for %jo = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 8 {loop_name = "jo", stage = "C", origin = "g.design:9:5"} {
// CHECK-NEXT:     loop.for %ii = affine_map<(d0) -> (d0)>(%io) to affine_map<(d0, d1) -> ((d0 + 4), d1)>(%io, %M) step 1 {loop_name = "ii", stage = "C", origin = "g.design:9:5"} {
// CHECK-NEXT:       loop.for %ji = affine_map<(d0) -> (d0)>(%jo) to affine_map<(d0, d1) -> ((d0 + 8), d1)>(%jo, %N) step 1 {loop_name = "ji", stage = "C", origin = "g.design:9:5"} {
// CHECK-NEXT:         loop.for %k = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%K) step 1 {loop_name = "k", stage = "C"} {
// CHECK-NEXT:           %a = loop.load %A[affine_map<(d0, d1, d2) -> (d0, d2)>] (%ii, %ji, %k)
// CHECK-NEXT:           %b = loop.load %B[affine_map<(d0, d1, d2) -> (d2, d1)>] (%ii, %ji, %k)
// CHECK-NEXT:           %c = loop.load %C[affine_map<(d0, d1, d2) -> (d0, d1)>] (%ii, %ji, %k)
// CHECK-NEXT:           %p = arith.mulf %a, %b : f32
// CHECK-NEXT:           %s = arith.addf %c, %p : f32
// CHECK-NEXT:           loop.store %s, %C[affine_map<(d0, d1, d2) -> (d0, d1)>] (%ii, %ji, %k)
// CHECK-NEXT:         }
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT: }

// Tiling i and k (with j between them) moves j inside: a, b, c, d, j.
// IK:      loop.for %a = {{.*}} step 4 {loop_name = "a", stage = "C"} {
// IK-NEXT:   loop.for %b = {{.*}}(%K) step 3 {loop_name = "b", stage = "C"} {
// IK-NEXT:     loop.for %c = affine_map<(d0) -> (d0)>(%a) to affine_map<(d0, d1) -> ((d0 + 4), d1)>(%a, %M) step 1 {loop_name = "c", stage = "C"} {
// IK-NEXT:       loop.for %d = affine_map<(d0) -> (d0)>(%b) to affine_map<(d0, d1) -> ((d0 + 3), d1)>(%b, %K) step 1 {loop_name = "d", stage = "C"} {
// IK-NEXT:         loop.for %j = {{.*}}(%N) step 1 {loop_name = "j", stage = "C"} {
// IK-NEXT:           loop.load %A[affine_map<(d0, d1, d2) -> (d0, d2)>] (%c, %j, %d)

// -----

// The nest's schedule attribute stays on its outermost loop.

func.func @marked(%M: index {irkit.name = "M"}, %N: index {irkit.name = "N"}, %C: memref<?x?x?xf32>) {
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "C", irkit.schedule = []} {
    loop.for %j = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", stage = "C"} {
      loop.for %k = affine_map<() -> (0)>() to affine_map<() -> (6)>() step 1 {loop_name = "k", stage = "C"} {
        %z = arith.constant 0.0 : f32
        loop.store %z, %C[affine_map<(d0, d1, d2) -> (d0, d1, d2)>] (%i, %j, %k) : f32, memref<?x?x?xf32>
      }
    }
  }
  func.return
}

// CHECK:      loop.for %io = {{.*}} {loop_name = "io", stage = "C", origin = "g.design:9:5", irkit.schedule = []} {
// CHECK-NEXT:   loop.for %jo = {{.*}} {loop_name = "jo", stage = "C", origin = "g.design:9:5"} {

// 6 is a whole number of blocks of 3: no min.
// IK:      loop.for %a = {{.*}} {loop_name = "a", stage = "C", irkit.schedule = []} {
// IK-NEXT:   loop.for %b = affine_map<() -> (0)>() to affine_map<() -> (6)>() step 3 {loop_name = "b", stage = "C"} {
// IK-NEXT:     loop.for %c = {{.*}} {loop_name = "c", stage = "C"} {
// IK-NEXT:       loop.for %d = affine_map<(d0) -> (d0)>(%b) to affine_map<(d0) -> ((d0 + 3))>(%b) step 1 {loop_name = "d", stage = "C"} {
// IK-NEXT:         loop.for %j = {{.*}} {loop_name = "j", stage = "C"} {
