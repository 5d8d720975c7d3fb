// --check-semantics on loop IR that is wrong before any pass runs (the tail of
// `split i by 32` lost its size clause, so rows past M are read): an error and
// exit 1, not a note and exit 0.
// RUN: not irkit-opt %s --check-semantics --check-semantics-engine=interp -p canonicalize 2>&1 | filecheck %s
// CHECK: error: --check-semantics: the input loop IR is wrong at sizes M=5, N=7, before any pass runs: load out of bounds: X[5, 0] is outside its shape [5, 7] at io=0, ii=5, j=0
// CHECK-NOT: Traceback
builtin.module {
  func.func @rowsum(%M: index {irkit.name = "M", irkit.default = 4096 : i64}, %N: index {irkit.name = "N", irkit.default = 1024 : i64}, %X: memref<?x?xf32> {irkit.name = "X", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>, irkit.align = 64 : i64}, %s: memref<?xf32> {irkit.name = "s", irkit.role = "output", irkit.shape = affine_map<()[s0, s1] -> (s0)>, irkit.align = 64 : i64}) attributes {irkit.hardware = "generic", irkit.doc = "s[i] = sum over j of X[i, j], f32", irkit.assume = {divisible = {}, aligned = {X = 64 : i64}, noalias = [["X", "s"]]}, irkit.metric = "throughput"} {
    loop.for %io = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 32 {loop_name = "io", stage = "s", origin = "examples/rowsum.design:23:5", parallel} {
      loop.for %d0i = affine_map<(d0) -> (d0)>(%io) to affine_map<(d0, d1) -> ((d0 + 32), d1)>(%io, %M) step 1 {loop_name = "d0i", stage = "s", origin = "examples/rowsum.design:22:5"} {
        %0 = arith.constant 0.000000e+00 : f32
        loop.store %0, %s[affine_map<(d0) -> (d0)>] (%d0i) : f32, memref<?xf32>
      }
      loop.for %ii = affine_map<(d0) -> (d0)>(%io) to affine_map<(d0, d1) -> ((d0 + 32))>(%io, %M) step 1 {loop_name = "ii", stage = "s", origin = "examples/rowsum.design:22:5"} {
        loop.for %j = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", stage = "s", vector = 16 : i64, origin = "examples/rowsum.design:24:5"} {
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
