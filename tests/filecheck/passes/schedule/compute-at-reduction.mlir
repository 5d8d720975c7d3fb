// A reduction as producer: `s[i] += X[i, k]^2` (a fill nest and an
// accumulation nest, both of stage s) computed per block of 4 rows of out
// (loop io), so both nests move, cut to rows [io, min(io + 4, M)), and s
// becomes a 4-element buffer indexed from io.  The reduction loop k is not
// cut.  At ii (one row), both row loops run once, from ii to ii + 1.
// RUN: irkit-opt %s -p 'schedule-compute-at{stage=s at=out loop=io}' | filecheck %s
// RUN: irkit-opt %s -p 'schedule-compute-at{stage=s at=out loop=ii}' | filecheck %s --check-prefix=ROW

  func.func @red(%M: index {irkit.name = "M"}, %N: index {irkit.name = "N"}, %K: index {irkit.name = "K"}, %X: memref<?x?xf32> {irkit.name = "X", irkit.role = "input", irkit.shape = affine_map<()[s0, s1, s2] -> (s0, s2)>}, %Y: memref<?x?xf32> {irkit.name = "Y", irkit.role = "input", irkit.shape = affine_map<()[s0, s1, s2] -> (s0, s1)>}, %out: memref<?x?xf32> {irkit.name = "out", irkit.role = "output", irkit.shape = affine_map<()[s0, s1, s2] -> (s0, s1)>}) {
    %s = loop.alloc(%M, %N, %K) {tensor_name = "s", shape = affine_map<()[s0, s1, s2] -> (s0)>} : memref<?xf32>
    loop.for %d0 = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "d0", stage = "s"} {
      %0 = arith.constant 0.000000e+00 : f32
      loop.store %0, %s[affine_map<(d0) -> (d0)>] (%d0) : f32, memref<?xf32>
    }
    loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "s"} {
      loop.for %k = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%K) step 1 {loop_name = "k", stage = "s"} {
        %X_1 = loop.load %X[affine_map<(d0, d1) -> (d0, d1)>] (%i, %k) : memref<?x?xf32> -> f32
        %X_2 = loop.load %X[affine_map<(d0, d1) -> (d0, d1)>] (%i, %k) : memref<?x?xf32> -> f32
        %s_1 = loop.load %s[affine_map<(d0, d1) -> (d0)>] (%i, %k) : memref<?xf32> -> f32
        %1 = arith.mulf %X_1, %X_2 : f32
        %2 = arith.addf %s_1, %1 : f32
        loop.store %2, %s[affine_map<(d0, d1) -> (d0)>] (%i, %k) : f32, memref<?xf32>
      }
    }
    loop.for %io = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 4 {loop_name = "io", stage = "out"} {
      loop.for %ii = affine_map<(d0) -> (d0)>(%io) to affine_map<(d0, d1) -> ((d0 + 4), d1)>(%io, %M) step 1 {loop_name = "ii", stage = "out"} {
        loop.for %j = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", stage = "out"} {
          %Y_1 = loop.load %Y[affine_map<(d0, d1) -> (d0, d1)>] (%ii, %j) : memref<?x?xf32> -> f32
          %s_2 = loop.load %s[affine_map<(d0, d1) -> (d0)>] (%ii, %j) : memref<?xf32> -> f32
          %3 = arith.divf %Y_1, %s_2 : f32
          loop.store %3, %out[affine_map<(d0, d1) -> (d0, d1)>] (%ii, %j) : f32, memref<?x?xf32>
        }
      }
    }
    loop.free %s : memref<?xf32>
    func.return
  }

// CHECK:      %[[S:.*]] = loop.alloc() {tensor_name = "s", shape = affine_map<() -> (4)>} : memref<?xf32>
// CHECK-NEXT: loop.for %[[IO:.*]] = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 4 {loop_name = "io", stage = "out"} {
// CHECK-NEXT:   loop.for %[[D0:.*]] = affine_map<(d0) -> (d0)>(%[[IO]]) to affine_map<(d0, d1) -> (d0, (d1 + 4))>(%M, %[[IO]]) step 1 {loop_name = "d0", stage = "s"} {
// CHECK-NEXT:     %{{.*}} = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     loop.store %{{.*}}, %[[S]][affine_map<(d0, d1) -> ((d0 + (d1 * -1)))>] (%[[D0]], %[[IO]])
// CHECK-NEXT:   }
// CHECK-NEXT:   loop.for %[[I:.*]] = affine_map<(d0) -> (d0)>(%[[IO]]) to affine_map<(d0, d1) -> (d0, (d1 + 4))>(%M, %[[IO]]) step 1 {loop_name = "i", stage = "s"} {
// CHECK-NEXT:     loop.for %[[K:.*]] = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%K) step 1 {loop_name = "k", stage = "s"} {
// CHECK:            loop.load %[[S]][affine_map<(d0, d1) -> ((d0 + (d1 * -1)))>] (%[[I]], %[[IO]])
// CHECK:            loop.store %{{.*}}, %[[S]][affine_map<(d0, d1) -> ((d0 + (d1 * -1)))>] (%[[I]], %[[IO]])
// CHECK:        loop.for %[[II:.*]] = {{.*}} {loop_name = "ii", stage = "out"} {
// CHECK:            loop.load %[[S]][affine_map<(d0, d1) -> ((d0 + (d1 * -1)))>] (%[[II]], %[[IO]])
// CHECK:      loop.free %[[S]]

// ROW:      %[[S:.*]] = loop.alloc() {tensor_name = "s", shape = affine_map<() -> (1)>} : memref<?xf32>
// ROW-NEXT: loop.for %{{.*}} {loop_name = "io", stage = "out"} {
// ROW-NEXT:   loop.for %[[II:.*]] = {{.*}} {loop_name = "ii", stage = "out"} {
// ROW-NEXT:     loop.for %[[D0:.*]] = affine_map<(d0) -> (d0)>(%[[II]]) to affine_map<(d0) -> ((d0 + 1))>(%[[II]]) step 1 {loop_name = "d0", stage = "s"} {
// ROW-NEXT:       %{{.*}} = arith.constant 0.000000e+00 : f32
// ROW-NEXT:       loop.store %{{.*}}, %[[S]][affine_map<(d0, d1) -> ((d0 + (d1 * -1)))>] (%[[D0]], %[[II]])
// ROW-NEXT:     }
// ROW-NEXT:     loop.for %[[I:.*]] = affine_map<(d0) -> (d0)>(%[[II]]) to affine_map<(d0) -> ((d0 + 1))>(%[[II]]) step 1 {loop_name = "i", stage = "s"} {
// ROW-NEXT:       loop.for %[[K:.*]] = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%K) step 1 {loop_name = "k", stage = "s"} {
// ROW-NEXT:         %{{.*}} = loop.load %X[affine_map<(d0, d1) -> (d0, d1)>] (%[[I]], %[[K]])
// ROW:              loop.store %{{.*}}, %[[S]][affine_map<(d0, d1) -> ((d0 + (d1 * -1)))>] (%[[I]], %[[II]])
// ROW:          loop.for %{{.*}} {loop_name = "j", stage = "out"} {
// ROW-NEXT:       %{{.*}} = loop.load %Y
// ROW-NEXT:       %{{.*}} = loop.load %[[S]][affine_map<() -> (0)>] ()
