// `irkit verify --loops` proves every access inside its buffer before raising:
// the tail of `split i by 32` lost its size clause (`min(io + 32, M)` became
// `io + 32`), so at M = 40 the loop reads X[63, j] and writes s[63].  The
// bounds proof says so at the split, with a note at the statement.
// RUN: not irkit verify %S/../../../../examples/rowsum.design --loops %s 2>&1 | filecheck %s
// CHECK: rowsum.design:22:5: error: load from X[ii, j] may be out of bounds: index 0 (ii) can reach M + 30, past its last element M - 1, for some sizes the document allows (the bounds of loop 'ii' allow it)
// CHECK-NEXT: split i by 32 -> io, ii
// CHECK: rowsum.design:12:3: note: in this statement
// CHECK-NEXT: s[i] += X[i, j]
// CHECK: rowsum.design:22:5: note: and 2 more accesses in the same loop: load from s[ii], store to s[ii]
// The rows past the tile were never zeroed either: the dataflow check sees the
// sum read them.
// CHECK: rowsum.design:12:3: error: load from s[ii] may read elements that are not written: index 0 (ii) can leave the window [io, min(M, io + 32)) that the store before it writes
// Raising refuses the split too: its inner loop has no bound at M.
// CHECK: rowsum.design:22:5: error: raise-loop: loop 'ii' runs a whole window of 32 from tile loop 'io' with no bound at M
// CHECK: 3 differences between the document and the generated code
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
