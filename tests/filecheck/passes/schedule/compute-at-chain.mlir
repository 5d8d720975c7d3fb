// A chain t1 -> t2 -> out with both temporaries at out.jo (consumers are
// placed first: t2, then t1, whose footprint comes from t2's loads over
// t2's new ranges).  Their row loops now run once per row of out (from
// i to i + 1; the bound M is implied and dropped).  `i` is parallel, so
// both temporaries get 1 x 1024 buffers private to it, indexed from
// (i, jo).
// RUN: irkit-opt %s -p 'schedule-compute-at{stage=t2 at=out loop=jo},schedule-compute-at{stage=t1 at=out loop=jo}' | filecheck %s
// RUN: irkit-opt %s -p 'schedule-compute-at{stage=t2 at=out loop=jo},schedule-compute-at{stage=t1 at=out loop=jo}' | irkit-opt | filecheck %s

func.func @chain(%M: index {irkit.name = "M"}, %N: index {irkit.name = "N"},
    %a: memref<?x?xf32> {irkit.name = "a", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>},
    %out: memref<?x?xf32> {irkit.name = "out", irkit.role = "output", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>}) {
  %t1 = loop.alloc(%M, %N) {tensor_name = "t1", shape = affine_map<()[s0, s1] -> (s0, s1)>} : memref<?x?xf32>
  %t2 = loop.alloc(%M, %N) {tensor_name = "t2", shape = affine_map<()[s0, s1] -> (s0, s1)>} : memref<?x?xf32>
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "t1"} {
    loop.for %j = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", stage = "t1", vector = 16 : i64} {
      %x = loop.load %a[affine_map<(d0, d1) -> (d0, d1)>] (%i, %j) : memref<?x?xf32> -> f32
      %y = arith.mulf %x, %x : f32
      loop.store %y, %t1[affine_map<(d0, d1) -> (d0, d1)>] (%i, %j) : f32, memref<?x?xf32>
    }
  }
  loop.for %i2 = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "t2"} {
    loop.for %j2 = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", stage = "t2"} {
      %x = loop.load %t1[affine_map<(d0, d1) -> (d0, d1)>] (%i2, %j2) : memref<?x?xf32> -> f32
      %y = arith.negf %x : f32
      loop.store %y, %t2[affine_map<(d0, d1) -> (d0, d1)>] (%i2, %j2) : f32, memref<?x?xf32>
    }
  }
  loop.for %io = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "out", parallel} {
    loop.for %jo = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1024 {loop_name = "jo", stage = "out"} {
      loop.for %ji = affine_map<(d0) -> (d0)>(%jo) to affine_map<(d0, d1) -> ((d0 + 1024), d1)>(%jo, %N) step 1 {loop_name = "ji", stage = "out", vector = 16 : i64} {
        %x = loop.load %t2[affine_map<(d0, d1) -> (d0, d1)>] (%io, %ji) : memref<?x?xf32> -> f32
        %y = math.exp %x : f32
        loop.store %y, %out[affine_map<(d0, d1) -> (d0, d1)>] (%io, %ji) : f32, memref<?x?xf32>
      }
    }
  }
  loop.free %t2 : memref<?x?xf32>
  loop.free %t1 : memref<?x?xf32>
  func.return
}

// CHECK:      func.func @chain
// CHECK-NEXT:   loop.for %[[I:.*]] = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "out", parallel} {
// CHECK-NEXT:     %[[T1:.*]] = loop.alloc() {tensor_name = "t1", shape = affine_map<() -> (1, 1024)>} : memref<?x?xf32>
// CHECK-NEXT:     %[[T2:.*]] = loop.alloc() {tensor_name = "t2", shape = affine_map<() -> (1, 1024)>} : memref<?x?xf32>
// CHECK-NEXT:     loop.for %[[JO:.*]] = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1024 {loop_name = "jo", stage = "out"} {
// CHECK-NEXT:       loop.for %[[I1:.*]] = affine_map<(d0) -> (d0)>(%[[I]]) to affine_map<(d0) -> ((d0 + 1))>(%[[I]]) step 1 {loop_name = "i", stage = "t1"} {
// CHECK-NEXT:         loop.for %[[J1:.*]] = affine_map<(d0) -> (d0)>(%[[JO]]) to affine_map<(d0, d1) -> (d0, (d1 + 1024))>(%N, %[[JO]]) step 1 {loop_name = "j", stage = "t1", vector = 16 : i64} {
// CHECK-NEXT:           %{{.*}} = loop.load %a[affine_map<(d0, d1) -> (d0, d1)>] (%[[I1]], %[[J1]])
// CHECK-NEXT:           %{{.*}} = arith.mulf
// CHECK-NEXT:           loop.store %{{.*}}, %[[T1]][affine_map<(d0, d1, d2, d3) -> ((d0 + (d2 * -1)), (d1 + (d3 * -1)))>] (%[[I1]], %[[J1]], %[[I]], %[[JO]])
// CHECK-NEXT:         }
// CHECK-NEXT:       }
// CHECK-NEXT:       loop.for %[[I2:.*]] = affine_map<(d0) -> (d0)>(%[[I]]) to affine_map<(d0) -> ((d0 + 1))>(%[[I]]) step 1 {loop_name = "i", stage = "t2"} {
// CHECK-NEXT:         loop.for %[[J2:.*]] = affine_map<(d0) -> (d0)>(%[[JO]]) to affine_map<(d0, d1) -> (d0, (d1 + 1024))>(%N, %[[JO]]) step 1 {loop_name = "j", stage = "t2"} {
// CHECK-NEXT:           %{{.*}} = loop.load %[[T1]][affine_map<(d0, d1, d2, d3) -> ((d0 + (d2 * -1)), (d1 + (d3 * -1)))>] (%[[I2]], %[[J2]], %[[I]], %[[JO]])
// CHECK-NEXT:           %{{.*}} = arith.negf
// CHECK-NEXT:           loop.store %{{.*}}, %[[T2]][affine_map<(d0, d1, d2, d3) -> ((d0 + (d2 * -1)), (d1 + (d3 * -1)))>] (%[[I2]], %[[J2]], %[[I]], %[[JO]])
// CHECK-NEXT:         }
// CHECK-NEXT:       }
// CHECK-NEXT:       loop.for %[[JI:.*]] = affine_map<(d0) -> (d0)>(%[[JO]]) to affine_map<(d0, d1) -> ((d0 + 1024), d1)>(%[[JO]], %N) step 1 {loop_name = "ji", stage = "out", vector = 16 : i64} {
// CHECK-NEXT:         %{{.*}} = loop.load %[[T2]][affine_map<(d0, d1) -> (0, (d0 + (d1 * -1)))>] (%[[JI]], %[[JO]])
// CHECK:        loop.free %[[T2]]
// CHECK-NEXT:   loop.free %[[T1]]
// CHECK-NEXT: }
// CHECK-NEXT: func.return
