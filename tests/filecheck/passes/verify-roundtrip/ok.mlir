// verify-roundtrip passes when the module implements the document: the loop
// IR irkit generates for examples/rowsum.design (function attributes left
// out: verification compares the computation, tensors, layout and schedule),
// and a document itself (lowered and raised on a copy).  The module is
// printed unchanged.
// RUN: irkit-opt %s -p 'verify-roundtrip{document="%S/../../../../examples/rowsum.design"}' | filecheck %s
// RUN: irkit-opt %S/../../../../examples/blur.design -p verify-roundtrip --emit design | filecheck %s --check-prefix=DESIGN
// RUN: irkit verify %S/../../../../examples/rowsum.design --loops %s | filecheck %s --check-prefix=CLI

func.func @rowsum(%M: index {irkit.name = "M", irkit.default = 4096 : i64}, %N: index {irkit.name = "N", irkit.default = 1024 : i64},
                  %X: memref<?x?xf32> {irkit.name = "X", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>, irkit.align = 64 : i64},
                  %s: memref<?xf32> {irkit.name = "s", irkit.role = "output", irkit.shape = affine_map<()[s0, s1] -> (s0)>, irkit.align = 64 : i64}) {
  loop.for %d0 = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "d0", stage = "s"} {
    %0 = arith.constant 0.000000e+00 : f32
    loop.store %0, %s[affine_map<(d0) -> (d0)>] (%d0) : f32, memref<?xf32>
  }
  loop.for %io = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 32 {loop_name = "io", stage = "s", parallel} {
    loop.for %ii = affine_map<(d0) -> (d0)>(%io) to affine_map<(d0, d1) -> ((d0 + 32), d1)>(%io, %M) step 1 {loop_name = "ii", stage = "s"} {
      loop.for %j = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", stage = "s", vector = 16 : i64} {
        %X_1 = loop.load %X[affine_map<(d0, d1) -> (d0, d1)>] (%ii, %j) : memref<?x?xf32> -> f32
        %s_1 = loop.load %s[affine_map<(d0, d1) -> (d0)>] (%ii, %j) : memref<?xf32> -> f32
        %1 = arith.addf %s_1, %X_1 : f32
        loop.store %1, %s[affine_map<(d0, d1) -> (d0)>] (%ii, %j) : f32, memref<?xf32>
      }
    }
  }
  func.return
}

// CHECK:      func.func @rowsum(
// CHECK:        loop.for %io = {{.*}} step 32 {loop_name = "io", stage = "s", parallel} {
// CHECK:            arith.addf

// DESIGN:      design blur {
// DESIGN:        tile y, x by 32, 256 -> yo, xo, yi, xi

// CLI: rowsum.design: ok, the loop IR given computes what the document asks, with its layout and schedule
