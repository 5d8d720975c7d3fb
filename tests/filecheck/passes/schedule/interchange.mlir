// schedule-interchange: swap two loops, each taking the other's place (the
// directive added end to end in docs/extending.md); legal when the same
// `reorder` is, and refused with reorder's reasons otherwise.
// RUN: irkit-opt %s -p 'schedule-interchange{stage=C first=j second=k loc="g.design:9:5"}' | filecheck %s
// RUN: not irkit-opt %s -p 'schedule-interchange{stage=C first=j second=q}' 2>&1 | filecheck %s --check-prefix=ERR

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

// CHECK:      loop.for %i = {{.*}} {loop_name = "i", stage = "C"} {
// CHECK-NEXT:   loop.for %k = {{.*}}(%K) step 1 {loop_name = "k", stage = "C"{{.*}}} {
// CHECK-NEXT:     loop.for %j = {{.*}}(%N) step 1 {loop_name = "j", stage = "C"{{.*}}} {
// CHECK-NEXT:       %a = loop.load %A[affine_map<(d0, d1, d2) -> (d0, d2)>] (%i, %j, %k)

// ERR: error: unknown loop 'q' in stage 'C'; its loops are: i, j, k
