// schedule-unroll-jam: `i` is unrolled by 4 and the copies are jammed into the
// innermost loop (copy r reads and writes row i + r, folded into the maps; the
// B element, the same for every copy, is loaded once).  The accumulated C
// elements live in one register tile per copy (loop.local) across the
// reduction loop k: loaded before it by a copy of the tile loop jv, stored
// back after it.  Constant bounds, 8 = 2 * 4 and jv a whole window: no
// remainder loops.
// RUN: irkit-opt %s --split-input-file -p 'schedule-unroll-jam{stage=C loop=i factor=4 loc="x.design:9:5"}' | filecheck %s
// RUN: irkit-opt %s --split-input-file -p 'schedule-unroll-jam{stage=C loop=i factor=4}' | irkit-opt --split-input-file | filecheck %s --check-prefix=RT

func.func @gemm(%K: index, %A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  loop.for %jr = affine_map<() -> (0)>() to affine_map<() -> (32)>() step 16 {loop_name = "jr", stage = "C"} {
    loop.for %i = affine_map<() -> (0)>() to affine_map<() -> (8)>() step 1 {loop_name = "i", stage = "C"} {
      loop.for %k = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%K) step 1 {loop_name = "k", stage = "C"} {
        loop.for %jv = affine_map<(d0) -> (d0)>(%jr) to affine_map<(d0) -> (d0 + 16)>(%jr) step 1 {loop_name = "jv", stage = "C", vector = 8 : i64} {
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
  func.return
}

// CHECK:      loop.for %i = affine_map<() -> (0)>() to affine_map<() -> (5)>() step 4 {loop_name = "i", stage = "C", origin = "x.design:9:5"} {
// CHECK-NEXT:   %C_acc0 = loop.local {tensor_name = "C_acc0"} : memref<16xf32>
// CHECK-NEXT:   %C_acc1 = loop.local {tensor_name = "C_acc1"} : memref<16xf32>
// CHECK-NEXT:   %C_acc2 = loop.local {tensor_name = "C_acc2"} : memref<16xf32>
// CHECK-NEXT:   %C_acc3 = loop.local {tensor_name = "C_acc3"} : memref<16xf32>
// CHECK-NEXT:   loop.for %[[JV0:.*]] = affine_map<(d0) -> (d0)>(%jr) to affine_map<(d0) -> ((d0 + 16))>(%jr) step 1 {loop_name = "jv", stage = "C", vector = 8 : i64, origin = "x.design:9:5"} {
// CHECK-NEXT:     %[[C0:.*]] = loop.load %C[affine_map<(d0, d1) -> (d0, d1)>] (%i, %[[JV0]])
// CHECK-NEXT:     loop.store %[[C0]], %C_acc0[affine_map<(d0, d1) -> ((d0 + (d1 * -1)))>] (%[[JV0]], %jr)
// CHECK-NEXT:     %[[C1:.*]] = loop.load %C[affine_map<(d0, d1) -> ((d0 + 1), d1)>] (%i, %[[JV0]])
// CHECK-NEXT:     loop.store %[[C1]], %C_acc1
// CHECK:          loop.store %{{.*}}, %C_acc3
// CHECK-NEXT:   }
// CHECK-NEXT:   loop.for %k = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%K) step 1 {loop_name = "k", stage = "C"} {
// CHECK-NEXT:     loop.for %[[JV:.*]] = affine_map<(d0) -> (d0)>(%jr) to affine_map<(d0) -> ((d0 + 16))>(%jr) step 1 {loop_name = "jv", stage = "C", vector = 8 : i64} {
// CHECK-NEXT:       %a = loop.load %A[affine_map<(d0, d1, d2) -> (d0, d2)>] (%i, %[[JV]], %k)
// CHECK-NEXT:       %b = loop.load %B[affine_map<(d0, d1, d2) -> (d2, d1)>] (%i, %[[JV]], %k)
// CHECK-NEXT:       %[[X0:.*]] = loop.load %C_acc0[affine_map<(d0, d1) -> ((d0 + (d1 * -1)))>] (%[[JV]], %jr)
// CHECK-NEXT:       %p = arith.mulf %a, %b : f32
// CHECK-NEXT:       %s = arith.addf %[[X0]], %p : f32
// CHECK-NEXT:       loop.store %s, %C_acc0[affine_map<(d0, d1) -> ((d0 + (d1 * -1)))>] (%[[JV]], %jr)
// CHECK-NEXT:       %[[A1:.*]] = loop.load %A[affine_map<(d0, d1, d2) -> ((d0 + 1), d2)>] (%i, %[[JV]], %k)
// CHECK-NEXT:       %[[X1:.*]] = loop.load %C_acc1
// CHECK-NEXT:       %[[P1:.*]] = arith.mulf %[[A1]], %b : f32
// CHECK-NEXT:       %[[S1:.*]] = arith.addf %[[X1]], %[[P1]] : f32
// CHECK-NEXT:       loop.store %[[S1]], %C_acc1
// CHECK:            %[[A3:.*]] = loop.load %A[affine_map<(d0, d1, d2) -> ((d0 + 3), d2)>] (%i, %[[JV]], %k)
// CHECK:            loop.store %{{.*}}, %C_acc3
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   loop.for %[[JV2:.*]] = affine_map<(d0) -> (d0)>(%jr) to affine_map<(d0) -> ((d0 + 16))>(%jr) step 1 {loop_name = "jv", stage = "C", vector = 8 : i64, origin = "x.design:9:5"} {
// CHECK-NEXT:     %[[Y0:.*]] = loop.load %C_acc0[affine_map<(d0, d1) -> ((d0 + (d1 * -1)))>] (%[[JV2]], %jr)
// CHECK-NEXT:     loop.store %[[Y0]], %C[affine_map<(d0, d1) -> (d0, d1)>] (%i, %[[JV2]])
// CHECK:          loop.store %{{.*}}, %C[affine_map<(d0, d1) -> ((d0 + 3), d1)>] (%i, %[[JV2]])
// CHECK-NEXT:   }
// CHECK-NEXT: }
// CHECK-NOT:  i_tail
// RT:         loop.for %i = affine_map<() -> (0)>() to affine_map<() -> (5)>() step 4 {loop_name = "i", stage = "C"} {
// RT-NEXT:      %C_acc0 = loop.local {tensor_name = "C_acc0"} : memref<16xf32>

// -----

// Symbolic bounds.  The main loop takes whole blocks of 4 rows (i < M - 3);
// the rows left over run in a remainder loop `i_tail` from the first block
// boundary at or above M - 3, with the original body and a one-row tile.
// The tile loop jv runs in the window [jr, jr + 16) cut by N, so jr is peeled:
// its main part (jr < N - 15) gets whole tiles (jv to jr + 16), `jr_tail` keeps
// the general code for the last, partial block of columns.

func.func @gemm(%M: index, %N: index, %K: index, %A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  loop.for %jr = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 16 {loop_name = "jr", stage = "C"} {
    loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "C"} {
      loop.for %k = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%K) step 1 {loop_name = "k", stage = "C"} {
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
  func.return
}

// CHECK:      loop.for %jr = affine_map<() -> (0)>() to affine_map<(d0) -> (d0, (d0 + -15))>(%N) step 16 {loop_name = "jr", stage = "C", origin = "x.design:9:5"} {
// CHECK-NEXT:   loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> ((d0 + -3))>(%M) step 4 {loop_name = "i", stage = "C", origin = "x.design:9:5"} {
// CHECK-COUNT-4:  loop.local
// CHECK-NEXT:     loop.for %{{.*}} = affine_map<(d0) -> (d0)>(%jr) to affine_map<(d0) -> ((d0 + 16))>(%jr) step 1 {loop_name = "jv"
// CHECK:          loop.for %k =
// CHECK-NEXT:       loop.for %{{.*}} = affine_map<(d0) -> (d0)>(%jr) to affine_map<(d0) -> ((d0 + 16))>(%jr) step 1 {loop_name = "jv"
// CHECK:        loop.for %i_tail = affine_map<(d0) -> (0, (((d0 + -3) ceildiv 4) * 4))>(%M) to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i_tail", stage = "C", origin = "x.design:9:5"} {
// CHECK-NEXT:     %C_acc = loop.local {tensor_name = "C_acc"} : memref<16xf32>
// CHECK:            %{{.*}} = loop.load %A[affine_map<(d0, d1, d2) -> (d0, d2)>] (%i_tail,
// CHECK:      loop.for %jr_tail = affine_map<(d0) -> (0, (((d0 + -15) ceildiv 16) * 16))>(%N) to affine_map<(d0) -> (d0)>(%N) step 16 {loop_name = "jr_tail", stage = "C", origin = "x.design:9:5"} {
// CHECK-NEXT:   loop.for %{{.*}} = affine_map<() -> (0)>() to affine_map<(d0) -> ((d0 + -3))>(%M) step 4 {loop_name = "i"
// CHECK-COUNT-4:  loop.local
// CHECK-NEXT:     loop.for %{{.*}} = affine_map<(d0) -> (d0)>(%jr_tail) to affine_map<(d0, d1) -> ((d0 + 16), d1)>(%jr_tail, %N) step 1 {loop_name = "jv"
// CHECK:        loop.for %{{.*}} = affine_map<(d0) -> (0, (((d0 + -3) ceildiv 4) * 4))>(%M) to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i_tail"

// -----

// A reduction with no loop of the output inside the reduction loop (a row
// sum): the copies are jammed, and each accumulated element gets a
// one-element tile held across the (vector) reduction loop j, which the C
// backend turns into one OpenMP simd reduction per copy.  The outer loop's
// own step (2, from an earlier split) scales the copies (rows i + 2, i + 4,
// i + 6) and the block (8): rows 0..7 in the main loop, row 8 in the
// remainder, which keeps step 2.

func.func @rowsum(%X: memref<?x?xf32>, %s: memref<?xf32>) {
  loop.for %i = affine_map<() -> (0)>() to affine_map<() -> (10)>() step 2 {loop_name = "i", stage = "C"} {
    loop.for %j = affine_map<() -> (0)>() to affine_map<() -> (64)>() step 1 {loop_name = "j", stage = "C", vector = 8 : i64} {
      %x = loop.load %X[affine_map<(d0, d1) -> (d0, d1)>] (%i, %j) : memref<?x?xf32> -> f32
      %a = loop.load %s[affine_map<(d0, d1) -> (d0)>] (%i, %j) : memref<?xf32> -> f32
      %r = arith.addf %a, %x : f32
      loop.store %r, %s[affine_map<(d0, d1) -> (d0)>] (%i, %j) : f32, memref<?xf32>
    }
  }
  func.return
}

// CHECK:      loop.for %i = affine_map<() -> (0)>() to affine_map<() -> (4)>() step 8 {loop_name = "i", stage = "C", origin = "x.design:9:5"} {
// CHECK-NEXT:   %s_acc0 = loop.local {tensor_name = "s_acc0"} : memref<1xf32>
// CHECK-COUNT-3:  loop.local
// CHECK-NEXT:   %[[A:.*]] = loop.load %s[affine_map<(d0) -> (d0)>] (%i) : memref<?xf32> -> f32
// CHECK-NEXT:   loop.store %[[A]], %s_acc0[affine_map<() -> (0)>] () : f32, memref<1xf32>
// CHECK:        loop.for %j = {{.*}} {loop_name = "j", stage = "C", vector = 8 : i64} {
// CHECK-NEXT:     %x = loop.load %X[affine_map<(d0, d1) -> (d0, d1)>] (%i, %j)
// CHECK-NEXT:     %[[Y:.*]] = loop.load %s_acc0[affine_map<() -> (0)>] ()
// CHECK-NEXT:     %r = arith.addf %[[Y]], %x : f32
// CHECK-NEXT:     loop.store %r, %s_acc0[affine_map<() -> (0)>] ()
// CHECK-NEXT:     %{{.*}} = loop.load %X[affine_map<(d0, d1) -> ((d0 + 2), d1)>] (%i, %j)
// CHECK-NEXT:     %{{.*}} = loop.load %s_acc1
// CHECK:          loop.store %{{.*}}, %s_acc3[affine_map<() -> (0)>] ()
// CHECK-NEXT:   }
// CHECK-NEXT:   %[[Z:.*]] = loop.load %s_acc0[affine_map<() -> (0)>] ()
// CHECK-NEXT:   loop.store %[[Z]], %s[affine_map<(d0) -> (d0)>] (%i)
// CHECK:        loop.store %{{.*}}, %s[affine_map<(d0) -> ((d0 + 6))>] (%i)
// CHECK-NEXT: }
// CHECK-NEXT: loop.for %i_tail = affine_map<() -> (8)>() to affine_map<() -> (10)>() step 2 {loop_name = "i_tail", stage = "C", origin = "x.design:9:5"} {
// CHECK-NEXT:   %s_acc = loop.local {tensor_name = "s_acc"} : memref<1xf32>
