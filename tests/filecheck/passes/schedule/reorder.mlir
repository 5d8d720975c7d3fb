// schedule-reorder: the named loops take the positions they occupy, in the
// order given (outermost first); loops not named stay.  Variables, bounds
// and bodies are unchanged.
// RUN: irkit-opt %s --split-input-file -p 'schedule-reorder{stage=C loops=k,i}' | filecheck %s
// RUN: irkit-opt %s --split-input-file -p 'schedule-reorder{stage=C loops=j,k,i}' | filecheck %s --check-prefix=ALL

func.func @gemm(%M: index {irkit.name = "M"}, %N: index {irkit.name = "N"}, %K: index {irkit.name = "K"},
                %A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "C", irkit.schedule = []} {
    loop.for %j = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", stage = "C", vector = 8 : i64} {
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

// CHECK:      loop.for %k = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%K) step 1 {loop_name = "k", stage = "C", irkit.schedule = []} {
// CHECK-NEXT:   loop.for %j = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", stage = "C", vector = 8 : i64} {
// CHECK-NEXT:     loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "C"} {
// CHECK-NEXT:       %a = loop.load %A[affine_map<(d0, d1, d2) -> (d0, d2)>] (%i, %j, %k)
// CHECK-NEXT:       %b = loop.load %B[affine_map<(d0, d1, d2) -> (d2, d1)>] (%i, %j, %k)
// CHECK-NEXT:       %c = loop.load %C[affine_map<(d0, d1, d2) -> (d0, d1)>] (%i, %j, %k)
// CHECK-NEXT:       %p = arith.mulf %a, %b : f32
// CHECK-NEXT:       %s = arith.addf %c, %p : f32
// CHECK-NEXT:       loop.store %s, %C[affine_map<(d0, d1, d2) -> (d0, d1)>] (%i, %j, %k)
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT: }

// ALL:      loop.for %j = {{.*}} {loop_name = "j", stage = "C", vector = 8 : i64, irkit.schedule = []} {
// ALL-NEXT:   loop.for %k = {{.*}} {loop_name = "k", stage = "C"} {
// ALL-NEXT:     loop.for %i = {{.*}} {loop_name = "i", stage = "C"} {

// -----

// The inner loop of a split may move as long as it stays inside the loop its
// bounds use (m runs from k to min(k + 16, K)):  i, k, m, j  becomes
// k, i, m, j  (CHECK)  and  j, k, m, i  (ALL).

func.func @split(%M: index {irkit.name = "M"}, %N: index {irkit.name = "N"}, %K: index {irkit.name = "K"},
                 %A: memref<?x?xf32>, %C: memref<?x?xf32>) {
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "C"} {
    loop.for %k = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%K) step 16 {loop_name = "k", stage = "C"} {
      loop.for %m = affine_map<(d0) -> (d0)>(%k) to affine_map<(d0, d1) -> ((d0 + 16), d1)>(%k, %K) step 1 {loop_name = "m", stage = "C"} {
        loop.for %j = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", stage = "C"} {
          %a = loop.load %A[affine_map<(d0, d1, d2) -> (d0, d1)>] (%i, %m, %j) : memref<?x?xf32> -> f32
          %c = loop.load %C[affine_map<(d0, d1, d2) -> (d0, d2)>] (%i, %m, %j) : memref<?x?xf32> -> f32
          %s = arith.addf %c, %a : f32
          loop.store %s, %C[affine_map<(d0, d1, d2) -> (d0, d2)>] (%i, %m, %j) : f32, memref<?x?xf32>
        }
      }
    }
  }
  func.return
}

// CHECK:      loop.for %k = {{.*}} step 16 {loop_name = "k", stage = "C"} {
// CHECK-NEXT:   loop.for %i = {{.*}} {loop_name = "i", stage = "C"} {
// CHECK-NEXT:     loop.for %m = affine_map<(d0) -> (d0)>(%k) to {{.*}} {loop_name = "m", stage = "C"} {
// CHECK-NEXT:       loop.for %j = {{.*}} {loop_name = "j", stage = "C"} {

// ALL:      loop.for %j = {{.*}} {loop_name = "j", stage = "C"} {
// ALL-NEXT:   loop.for %k = {{.*}} {loop_name = "k", stage = "C"} {
// ALL-NEXT:     loop.for %m = {{.*}} {loop_name = "m", stage = "C"} {
// ALL-NEXT:       loop.for %i = {{.*}} {loop_name = "i", stage = "C"} {
