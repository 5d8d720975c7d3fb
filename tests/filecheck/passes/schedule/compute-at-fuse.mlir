// schedule-fuse-stage: a generalized softmax is four nests over the rows
// (row max, exp, row sum, divide) plus the fills of P_max and P_sum.  All of
// them are computed inside the row loop of the last nest, last first with
// compute_at's machinery: per row, the temporaries shrink to one element
// private to the parallel row loop, the fills and each nest's own row loop
// run once and disappear, and the whole softmax is one pass over the rows.
// RUN: irkit-opt %s -p schedule-fuse-stage | filecheck %s
// RUN: irkit-opt %s -p 'schedule-fuse-stage{stage=P}' | irkit-opt | filecheck %s

  func.func @sm(%M: index {irkit.name = "M"}, %N: index {irkit.name = "N"}, %X: memref<?x?xf32> {irkit.name = "X", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>}, %P: memref<?x?xf32> {irkit.name = "P", irkit.role = "output", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>}) {
    %P_max = loop.alloc(%M, %N) {tensor_name = "P_max", shape = affine_map<()[s0, s1] -> (s0)>} : memref<?xf32>
    %P_sum = loop.alloc(%M, %N) {tensor_name = "P_sum", shape = affine_map<()[s0, s1] -> (s0)>} : memref<?xf32>
    loop.for %d0 = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "d0", stage = "P"} {
      %0 = arith.constant 0xff800000 : f32
      loop.store %0, %P_max[affine_map<(d0) -> (d0)>] (%d0) : f32, memref<?xf32>
    }
    loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "P", parallel} {
      loop.for %j = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", stage = "P"} {
        %X_1 = loop.load %X[affine_map<(d0, d1) -> (d0, d1)>] (%i, %j) : memref<?x?xf32> -> f32
        %P_max_1 = loop.load %P_max[affine_map<(d0, d1) -> (d0)>] (%i, %j) : memref<?xf32> -> f32
        %1 = arith.maximumf %P_max_1, %X_1 : f32
        loop.store %1, %P_max[affine_map<(d0, d1) -> (d0)>] (%i, %j) : f32, memref<?xf32>
      }
    }
    loop.for %i_1 = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "P", parallel} {
      loop.for %j_1 = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", stage = "P"} {
        %X_2 = loop.load %X[affine_map<(d0, d1) -> (d0, d1)>] (%i_1, %j_1) : memref<?x?xf32> -> f32
        %P_max_2 = loop.load %P_max[affine_map<(d0, d1) -> (d0)>] (%i_1, %j_1) : memref<?xf32> -> f32
        %2 = arith.subf %X_2, %P_max_2 : f32
        %3 = math.exp %2 : f32
        loop.store %3, %P[affine_map<(d0, d1) -> (d0, d1)>] (%i_1, %j_1) : f32, memref<?x?xf32>
      }
    }
    loop.for %d0_1 = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "d0", stage = "P"} {
      %4 = arith.constant 0.000000e+00 : f32
      loop.store %4, %P_sum[affine_map<(d0) -> (d0)>] (%d0_1) : f32, memref<?xf32>
    }
    loop.for %i_2 = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "P", parallel} {
      loop.for %j_2 = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", stage = "P"} {
        %P_1 = loop.load %P[affine_map<(d0, d1) -> (d0, d1)>] (%i_2, %j_2) : memref<?x?xf32> -> f32
        %P_sum_1 = loop.load %P_sum[affine_map<(d0, d1) -> (d0)>] (%i_2, %j_2) : memref<?xf32> -> f32
        %5 = arith.addf %P_sum_1, %P_1 : f32
        loop.store %5, %P_sum[affine_map<(d0, d1) -> (d0)>] (%i_2, %j_2) : f32, memref<?xf32>
      }
    }
    loop.for %i_3 = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "P", parallel} {
      loop.for %j_3 = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", stage = "P"} {
        %P_sum_2 = loop.load %P_sum[affine_map<(d0, d1) -> (d0)>] (%i_3, %j_3) : memref<?xf32> -> f32
        %P_2 = loop.load %P[affine_map<(d0, d1) -> (d0, d1)>] (%i_3, %j_3) : memref<?x?xf32> -> f32
        %6 = arith.divf %P_2, %P_sum_2 : f32
        loop.store %6, %P[affine_map<(d0, d1) -> (d0, d1)>] (%i_3, %j_3) : f32, memref<?x?xf32>
      }
    }
    loop.free %P_sum : memref<?xf32>
    loop.free %P_max : memref<?xf32>
    func.return
  }

// CHECK:      func.func @sm
// CHECK-NEXT:   loop.for %[[I:.*]] = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "P", parallel} {
// CHECK-NEXT:     %[[MAX:.*]] = loop.alloc() {tensor_name = "P_max", shape = affine_map<() -> (1)>} : memref<?xf32>
// CHECK-NEXT:     %[[SUM:.*]] = loop.alloc() {tensor_name = "P_sum", shape = affine_map<() -> (1)>} : memref<?xf32>
// CHECK-NEXT:     %{{.*}} = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     loop.store %{{.*}}, %[[SUM]][affine_map<() -> (0)>] () : f32, memref<?xf32>
// CHECK-NEXT:     %{{.*}} = arith.constant 0xff800000 : f32
// CHECK-NEXT:     loop.store %{{.*}}, %[[MAX]][affine_map<() -> (0)>] () : f32, memref<?xf32>
// CHECK-NEXT:     loop.for %[[J0:.*]] = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", stage = "P"} {
// CHECK-NEXT:       %{{.*}} = loop.load %X[affine_map<(d0, d1) -> (d0, d1)>] (%[[I]], %[[J0]])
// CHECK-NEXT:       %{{.*}} = loop.load %[[MAX]][affine_map<() -> (0)>] ()
// CHECK-NEXT:       %{{.*}} = arith.maximumf
// CHECK-NEXT:       loop.store %{{.*}}, %[[MAX]][affine_map<() -> (0)>] ()
// CHECK-NEXT:     }
// CHECK-NEXT:     loop.for %[[J1:.*]] = {{.*}} {loop_name = "j", stage = "P"} {
// CHECK:            math.exp
// CHECK-NEXT:       loop.store %{{.*}}, %P[affine_map<(d0, d1) -> (d0, d1)>] (%[[I]], %[[J1]])
// CHECK-NEXT:     }
// CHECK-NEXT:     loop.for %[[J2:.*]] = {{.*}} {loop_name = "j", stage = "P"} {
// CHECK:            arith.addf
// CHECK-NEXT:       loop.store %{{.*}}, %[[SUM]][affine_map<() -> (0)>] ()
// CHECK-NEXT:     }
// CHECK-NEXT:     loop.for %[[J3:.*]] = {{.*}} {loop_name = "j", stage = "P"} {
// CHECK:            arith.divf
// CHECK-NEXT:       loop.store %{{.*}}, %P[affine_map<(d0, d1) -> (d0, d1)>] (%[[I]], %[[J3]])
// CHECK-NEXT:     }
// CHECK-NEXT:     loop.free %[[SUM]]
// CHECK-NEXT:     loop.free %[[MAX]]
// CHECK-NEXT:   }
// CHECK-NEXT:   func.return
