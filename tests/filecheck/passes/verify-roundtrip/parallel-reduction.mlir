// `irkit verify --loops` runs the IR verifiers before raising: `parallel`
// marked on the reduction loop j of examples/rowsum.design (a data race: every
// iteration of j updates s[ii]) is the loop dialect verifier's error, located
// at the directive that made j, and the command exits 1 with no traceback.
// RUN: not irkit verify %S/../../../../examples/rowsum.design --loops %s 2>&1 | filecheck %s
// CHECK: rowsum.design:24:5: error: the loop IR does not verify: loop 'j' is parallel, but a store to a buffer it does not own does not depend on its induction variable: two iterations would write the same element
// CHECK-NOT: Traceback
builtin.module {
  func.func @rowsum(%M: index {irkit.name = "M", irkit.default = 4096 : i64}, %N: index {irkit.name = "N", irkit.default = 1024 : i64}, %X: memref<?x?xf32> {irkit.name = "X", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>, irkit.align = 64 : i64}, %s: memref<?xf32> {irkit.name = "s", irkit.role = "output", irkit.shape = affine_map<()[s0, s1] -> (s0)>, irkit.align = 64 : i64}) attributes {irkit.hardware = "generic", irkit.doc = "s[i] = sum over j of X[i, j], f32", irkit.assume = {divisible = {}, aligned = {X = 64 : i64}, noalias = [["X", "s"]]}, irkit.metric = "throughput"} {
    loop.for %io = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 32 {loop_name = "io", stage = "s", origin = "examples/rowsum.design:23:5", parallel} {
      loop.for %d0i = affine_map<(d0) -> (d0)>(%io) to affine_map<(d0, d1) -> ((d0 + 32), d1)>(%io, %M) step 1 {loop_name = "d0i", stage = "s", origin = "examples/rowsum.design:22:5"} {
        %0 = arith.constant 0.000000e+00 : f32
        loop.store %0, %s[affine_map<(d0) -> (d0)>] (%d0i) : f32, memref<?xf32>
      }
      loop.for %ii = affine_map<(d0) -> (d0)>(%io) to affine_map<(d0, d1) -> ((d0 + 32), d1)>(%io, %M) step 1 {loop_name = "ii", stage = "s", origin = "examples/rowsum.design:22:5"} {
        loop.for %j = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", stage = "s", vector = 16 : i64, origin = "examples/rowsum.design:24:5", parallel} {
          %X_1 = loop.load %X[affine_map<(d0, d1) -> (d0, d1)>] (%ii, %j) : memref<?x?xf32> -> f32
          %s_1 = loop.load %s[affine_map<(d0, d1) -> (d0)>] (%ii, %j) : memref<?xf32> -> f32
          %1 = arith.addf %s_1, %X_1 : f32
          loop.store %1, %s[affine_map<(d0, d1) -> (d0)>] (%ii, %j) : f32, memref<?xf32>
        }
      }
    }
    func.return
  }
}
