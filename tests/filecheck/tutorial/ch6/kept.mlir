// Chapter 6: a band already in its best order is left exactly as it was (the
// printed IR is identical); so is a band longer than max-band.
// RUN: irkit-opt %s > %t.before
// RUN: irkit-opt %s --plugin %S/../../../../examples/tutorial/ch6/interchange.py -p tutorial-interchange > %t.after
// RUN: diff %t.before %t.after
// RUN: irkit-opt %s --plugin %S/../../../../examples/tutorial/ch6/interchange.py -p 'tutorial-interchange{report=true}' 2>&1 >/dev/null | filecheck %s
// RUN: irkit-opt %s --plugin %S/../../../../examples/tutorial/ch6/interchange.py -p 'tutorial-interchange{max-band=2 report=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=MAX

// CHECK:      tutorial-interchange: band (d0, d1): kept, no order is predicted faster than its {{.*}} s
// CHECK-NEXT: tutorial-interchange: band (i, k, j): kept, no order is predicted faster than its {{.*}} s
// MAX:        tutorial-interchange: band (i, k, j): 3 loops, more than max-band=2; left alone

builtin.module {
  func.func @matmul_ikj(%M: index {irkit.name = "M", irkit.default = 512 : i64}, %N: index {irkit.name = "N", irkit.default = 512 : i64}, %K: index {irkit.name = "K", irkit.default = 512 : i64}, %A: memref<?x?xf32> {irkit.name = "A", irkit.role = "input", irkit.shape = affine_map<()[s0, s1, s2] -> (s0, s2)>}, %B: memref<?x?xf32> {irkit.name = "B", irkit.role = "input", irkit.shape = affine_map<()[s0, s1, s2] -> (s2, s1)>}, %C: memref<?x?xf32> {irkit.name = "C", irkit.role = "output", irkit.shape = affine_map<()[s0, s1, s2] -> (s0, s1)>}) attributes {irkit.hardware = "generic", irkit.assume = {divisible = {}, aligned = {}, noalias = []}} {
    loop.for %d0 = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "d0", stage = "C"} {
      loop.for %d1 = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "d1", stage = "C"} {
        %0 = arith.constant 0.000000e+00 : f32
        loop.store %0, %C[affine_map<(d0, d1) -> (d0, d1)>] (%d0, %d1) : f32, memref<?x?xf32>
      }
    }
    loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "C"} {
      loop.for %k = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%K) step 1 {loop_name = "k", stage = "C"} {
        loop.for %j = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", stage = "C"} {
          %A_1 = loop.load %A[affine_map<(d0, d1, d2) -> (d0, d2)>] (%i, %j, %k) : memref<?x?xf32> -> f32
          %B_1 = loop.load %B[affine_map<(d0, d1, d2) -> (d2, d1)>] (%i, %j, %k) : memref<?x?xf32> -> f32
          %C_1 = loop.load %C[affine_map<(d0, d1, d2) -> (d0, d1)>] (%i, %j, %k) : memref<?x?xf32> -> f32
          %1 = arith.mulf %A_1, %B_1 : f32
          %2 = arith.addf %C_1, %1 : f32
          loop.store %2, %C[affine_map<(d0, d1, d2) -> (d0, d1)>] (%i, %j, %k) : f32, memref<?x?xf32>
        }
      }
    }
    func.return
  }
}
