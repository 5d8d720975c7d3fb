// Register blocks raising undoes besides gemm's (issue 14):
// - a reduction into a 1-D output jammed on its rows (`unroll_jam i by 4`): each
//   row's accumulator is a one-element register tile, loaded and stored back
//   outside any loop (no copy-in loop to read the tile's view from);
// - the reduction loop itself jammed (`unroll_jam k by 3`): the copies
//   accumulate into one element, each reading k + r, and the tail runs the rest.
// Both raise to one generic with the unroll_jam directive in its schedule.
// RUN: irkit-opt %s --split-input-file -p raise-loop | filecheck %s
// RUN: irkit-opt %s --split-input-file -p raise-loop,raise-tensorop --emit design | filecheck %s --check-prefix=DESIGN

  func.func @mv(%M: index {irkit.name = "M", irkit.default = 64 : i64}, %N: index {irkit.name = "N", irkit.default = 64 : i64}, %A: memref<?x?xf32> {irkit.name = "A", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>}, %x: memref<?xf32> {irkit.name = "x", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> (s1)>}, %y: memref<?xf32> {irkit.name = "y", irkit.role = "output", irkit.shape = affine_map<()[s0, s1] -> (s0)>}) attributes {irkit.assume = {divisible = {}, aligned = {}, noalias = []}} {
    loop.for %d0 = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "d0", stage = "y"} {
      %0 = arith.constant 0.000000e+00 : f32
      loop.store %0, %y[affine_map<(d0) -> (d0)>] (%d0) : f32, memref<?xf32>
    }
    loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> ((d0 + -3))>(%M) step 4 {loop_name = "i", stage = "y"} {
      %y_acc0 = loop.local {tensor_name = "y_acc0"} : memref<1xf32>
      %y_acc1 = loop.local {tensor_name = "y_acc1"} : memref<1xf32>
      %y_acc2 = loop.local {tensor_name = "y_acc2"} : memref<1xf32>
      %y_acc3 = loop.local {tensor_name = "y_acc3"} : memref<1xf32>
      %y_1 = loop.load %y[affine_map<(d0) -> (d0)>] (%i) : memref<?xf32> -> f32
      loop.store %y_1, %y_acc0[affine_map<() -> (0)>] () : f32, memref<1xf32>
      %y_2 = loop.load %y[affine_map<(d0) -> ((d0 + 1))>] (%i) : memref<?xf32> -> f32
      loop.store %y_2, %y_acc1[affine_map<() -> (0)>] () : f32, memref<1xf32>
      %y_3 = loop.load %y[affine_map<(d0) -> ((d0 + 2))>] (%i) : memref<?xf32> -> f32
      loop.store %y_3, %y_acc2[affine_map<() -> (0)>] () : f32, memref<1xf32>
      %y_4 = loop.load %y[affine_map<(d0) -> ((d0 + 3))>] (%i) : memref<?xf32> -> f32
      loop.store %y_4, %y_acc3[affine_map<() -> (0)>] () : f32, memref<1xf32>
      loop.for %j = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", stage = "y"} {
        %A_1 = loop.load %A[affine_map<(d0, d1) -> (d0, d1)>] (%i, %j) : memref<?x?xf32> -> f32
        %x_1 = loop.load %x[affine_map<(d0, d1) -> (d1)>] (%i, %j) : memref<?xf32> -> f32
        %y_5 = loop.load %y_acc0[affine_map<() -> (0)>] () : memref<1xf32> -> f32
        %1 = arith.mulf %A_1, %x_1 : f32
        %2 = arith.addf %y_5, %1 : f32
        loop.store %2, %y_acc0[affine_map<() -> (0)>] () : f32, memref<1xf32>
        %A_2 = loop.load %A[affine_map<(d0, d1) -> ((d0 + 1), d1)>] (%i, %j) : memref<?x?xf32> -> f32
        %y_6 = loop.load %y_acc1[affine_map<() -> (0)>] () : memref<1xf32> -> f32
        %3 = arith.mulf %A_2, %x_1 : f32
        %4 = arith.addf %y_6, %3 : f32
        loop.store %4, %y_acc1[affine_map<() -> (0)>] () : f32, memref<1xf32>
        %A_3 = loop.load %A[affine_map<(d0, d1) -> ((d0 + 2), d1)>] (%i, %j) : memref<?x?xf32> -> f32
        %y_7 = loop.load %y_acc2[affine_map<() -> (0)>] () : memref<1xf32> -> f32
        %5 = arith.mulf %A_3, %x_1 : f32
        %6 = arith.addf %y_7, %5 : f32
        loop.store %6, %y_acc2[affine_map<() -> (0)>] () : f32, memref<1xf32>
        %A_4 = loop.load %A[affine_map<(d0, d1) -> ((d0 + 3), d1)>] (%i, %j) : memref<?x?xf32> -> f32
        %y_8 = loop.load %y_acc3[affine_map<() -> (0)>] () : memref<1xf32> -> f32
        %7 = arith.mulf %A_4, %x_1 : f32
        %8 = arith.addf %y_8, %7 : f32
        loop.store %8, %y_acc3[affine_map<() -> (0)>] () : f32, memref<1xf32>
      }
      %y_9 = loop.load %y_acc0[affine_map<() -> (0)>] () : memref<1xf32> -> f32
      loop.store %y_9, %y[affine_map<(d0) -> (d0)>] (%i) : f32, memref<?xf32>
      %y_10 = loop.load %y_acc1[affine_map<() -> (0)>] () : memref<1xf32> -> f32
      loop.store %y_10, %y[affine_map<(d0) -> ((d0 + 1))>] (%i) : f32, memref<?xf32>
      %y_11 = loop.load %y_acc2[affine_map<() -> (0)>] () : memref<1xf32> -> f32
      loop.store %y_11, %y[affine_map<(d0) -> ((d0 + 2))>] (%i) : f32, memref<?xf32>
      %y_12 = loop.load %y_acc3[affine_map<() -> (0)>] () : memref<1xf32> -> f32
      loop.store %y_12, %y[affine_map<(d0) -> ((d0 + 3))>] (%i) : f32, memref<?xf32>
    }
    loop.for %i_tail = affine_map<(d0) -> (0, (((d0 + -3) ceildiv 4) * 4))>(%M) to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i_tail", stage = "y"} {
      %y_acc = loop.local {tensor_name = "y_acc"} : memref<1xf32>
      %y_13 = loop.load %y[affine_map<(d0) -> (d0)>] (%i_tail) : memref<?xf32> -> f32
      loop.store %y_13, %y_acc[affine_map<() -> (0)>] () : f32, memref<1xf32>
      loop.for %j_1 = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", stage = "y"} {
        %A_5 = loop.load %A[affine_map<(d0, d1) -> (d0, d1)>] (%i_tail, %j_1) : memref<?x?xf32> -> f32
        %x_2 = loop.load %x[affine_map<(d0, d1) -> (d1)>] (%i_tail, %j_1) : memref<?xf32> -> f32
        %y_14 = loop.load %y_acc[affine_map<() -> (0)>] () : memref<1xf32> -> f32
        %9 = arith.mulf %A_5, %x_2 : f32
        %10 = arith.addf %y_14, %9 : f32
        loop.store %10, %y_acc[affine_map<() -> (0)>] () : f32, memref<1xf32>
      }
      %y_15 = loop.load %y_acc[affine_map<() -> (0)>] () : memref<1xf32> -> f32
      loop.store %y_15, %y[affine_map<(d0) -> (d0)>] (%i_tail) : f32, memref<?xf32>
    }
    func.return
  }

// -----

  func.func @gemm(%M: index {irkit.name = "M", irkit.default = 10 : i64}, %N: index {irkit.name = "N", irkit.default = 7 : i64}, %K: index {irkit.name = "K", irkit.default = 11 : i64}, %A: memref<?x?xf32> {irkit.name = "A", irkit.role = "input", irkit.shape = affine_map<()[s0, s1, s2] -> (s0, s2)>}, %B: memref<?x?xf32> {irkit.name = "B", irkit.role = "input", irkit.shape = affine_map<()[s0, s1, s2] -> (s2, s1)>}, %C: memref<?x?xf32> {irkit.name = "C", irkit.role = "output", irkit.shape = affine_map<()[s0, s1, s2] -> (s0, s1)>}) attributes {irkit.assume = {divisible = {}, aligned = {}, noalias = []}} {
    loop.for %d0 = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "d0", stage = "C"} {
      loop.for %d1 = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "d1", stage = "C"} {
        %0 = arith.constant 0.000000e+00 : f32
        loop.store %0, %C[affine_map<(d0, d1) -> (d0, d1)>] (%d0, %d1) : f32, memref<?x?xf32>
      }
    }
    loop.for %k = affine_map<() -> (0)>() to affine_map<(d0) -> ((d0 + -2))>(%K) step 3 {loop_name = "k", stage = "C"} {
      loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "C"} {
        loop.for %j = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", stage = "C"} {
          %A_1 = loop.load %A[affine_map<(d0, d1, d2) -> (d0, d2)>] (%i, %j, %k) : memref<?x?xf32> -> f32
          %B_1 = loop.load %B[affine_map<(d0, d1, d2) -> (d2, d1)>] (%i, %j, %k) : memref<?x?xf32> -> f32
          %C_1 = loop.load %C[affine_map<(d0, d1, d2) -> (d0, d1)>] (%i, %j, %k) : memref<?x?xf32> -> f32
          %1 = arith.mulf %A_1, %B_1 : f32
          %2 = arith.addf %C_1, %1 : f32
          loop.store %2, %C[affine_map<(d0, d1, d2) -> (d0, d1)>] (%i, %j, %k) : f32, memref<?x?xf32>
          %A_2 = loop.load %A[affine_map<(d0, d1, d2) -> (d0, (d2 + 1))>] (%i, %j, %k) : memref<?x?xf32> -> f32
          %B_2 = loop.load %B[affine_map<(d0, d1, d2) -> ((d2 + 1), d1)>] (%i, %j, %k) : memref<?x?xf32> -> f32
          %C_2 = loop.load %C[affine_map<(d0, d1, d2) -> (d0, d1)>] (%i, %j, %k) : memref<?x?xf32> -> f32
          %3 = arith.mulf %A_2, %B_2 : f32
          %4 = arith.addf %C_2, %3 : f32
          loop.store %4, %C[affine_map<(d0, d1, d2) -> (d0, d1)>] (%i, %j, %k) : f32, memref<?x?xf32>
          %A_3 = loop.load %A[affine_map<(d0, d1, d2) -> (d0, (d2 + 2))>] (%i, %j, %k) : memref<?x?xf32> -> f32
          %B_3 = loop.load %B[affine_map<(d0, d1, d2) -> ((d2 + 2), d1)>] (%i, %j, %k) : memref<?x?xf32> -> f32
          %C_3 = loop.load %C[affine_map<(d0, d1, d2) -> (d0, d1)>] (%i, %j, %k) : memref<?x?xf32> -> f32
          %5 = arith.mulf %A_3, %B_3 : f32
          %6 = arith.addf %C_3, %5 : f32
          loop.store %6, %C[affine_map<(d0, d1, d2) -> (d0, d1)>] (%i, %j, %k) : f32, memref<?x?xf32>
        }
      }
    }
    loop.for %k_tail = affine_map<(d0) -> (0, (((d0 + -2) ceildiv 3) * 3))>(%K) to affine_map<(d0) -> (d0)>(%K) step 1 {loop_name = "k_tail", stage = "C"} {
      loop.for %i_1 = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "C"} {
        loop.for %j_1 = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", stage = "C"} {
          %A_4 = loop.load %A[affine_map<(d0, d1, d2) -> (d0, d2)>] (%i_1, %j_1, %k_tail) : memref<?x?xf32> -> f32
          %B_4 = loop.load %B[affine_map<(d0, d1, d2) -> (d2, d1)>] (%i_1, %j_1, %k_tail) : memref<?x?xf32> -> f32
          %C_4 = loop.load %C[affine_map<(d0, d1, d2) -> (d0, d1)>] (%i_1, %j_1, %k_tail) : memref<?x?xf32> -> f32
          %7 = arith.mulf %A_4, %B_4 : f32
          %8 = arith.addf %C_4, %7 : f32
          loop.store %8, %C[affine_map<(d0, d1, d2) -> (d0, d1)>] (%i_1, %j_1, %k_tail) : f32, memref<?x?xf32>
        }
      }
    }
    func.return
  }

// CHECK:      tensorop.fill
// CHECK-NEXT: tensorop.generic {{.*}} attributes {stage = "y", loop_names = ["i", "j"], domain = affine_map<()[s0, s1] -> (s0, s1)>, {{.*}} iterators = ["parallel", "reduction"], schedule = [{kind = "unroll_jam", loop = "i", factor = 4 : i64}]}
// CHECK-NOT:  tensorop.generic
// CHECK:      func.return

// CHECK:      tensorop.fill
// CHECK-NEXT: tensorop.generic {{.*}} attributes {stage = "C", loop_names = ["i", "j", "k"], {{.*}} iterators = ["parallel", "parallel", "reduction"], schedule = [{kind = "reorder", loops = ["k", "i", "j"]}, {kind = "unroll_jam", loop = "k", factor = 3 : i64}]}
// CHECK-NOT:  tensorop.generic
// CHECK:      func.return

// DESIGN:      y[i] += A[i, j] * x[j]
// DESIGN:      schedule y {
// DESIGN-NEXT:   unroll_jam i by 4
// DESIGN-NEXT: }

// DESIGN:      C = matmul(A, B)
// DESIGN:      schedule C {
// DESIGN-NEXT:   reorder k, i, j
// DESIGN-NEXT:   unroll_jam k by 3
// DESIGN-NEXT: }
