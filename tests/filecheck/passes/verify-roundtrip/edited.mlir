// verify-roundtrip on loop IR edited by hand, checked against the document it
// claims to implement (examples/rowsum.design): each edit is an error on
// the document line whose intent it breaks, and irkit-opt exits 1.
// RUN: not irkit-opt %s --split-input-file -p 'verify-roundtrip{document="%S/../../../../examples/rowsum.design"}' 2>&1 | filecheck %s
// RUN: not irkit-opt %s -p verify-roundtrip --split-input-file 2>&1 | filecheck %s --check-prefix=NODOC

// NODOC: error: verify-roundtrip: the module is not a design document; name the document it implements with 'verify-roundtrip{document="FILE.design"}'
// NODOC-NOT: Traceback

// The sum became a maximum: an error at the statement.
// CHECK: {{.*}}rowsum.design:12:3: error: document computes +(X[i, j], out), generated code computes max(X[i, j], out)
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
        %1 = arith.maximumf %s_1, %X_1 : f32
        loop.store %1, %s[affine_map<(d0, d1) -> (d0)>] (%ii, %j) : f32, memref<?xf32>
      }
    }
  }
  func.return
}

// -----

// The rows are no longer distributed over the cores: an error at `parallel io`.
// CHECK: {{.*}}rowsum.design:23:5: error: schedule of s: document runs io in parallel, generated code does not
func.func @rowsum(%M: index {irkit.name = "M", irkit.default = 4096 : i64}, %N: index {irkit.name = "N", irkit.default = 1024 : i64},
                  %X: memref<?x?xf32> {irkit.name = "X", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>, irkit.align = 64 : i64},
                  %s: memref<?xf32> {irkit.name = "s", irkit.role = "output", irkit.shape = affine_map<()[s0, s1] -> (s0)>, irkit.align = 64 : i64}) {
  loop.for %d0 = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "d0", stage = "s"} {
    %0 = arith.constant 0.000000e+00 : f32
    loop.store %0, %s[affine_map<(d0) -> (d0)>] (%d0) : f32, memref<?xf32>
  }
  loop.for %io = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 32 {loop_name = "io", stage = "s"} {
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

// -----

// Blocks of 16 rows instead of 32: an error at the split.
// CHECK: {{.*}}rowsum.design:22:5: error: schedule of s: document splits i by 32, generated code by 16
func.func @rowsum(%M: index {irkit.name = "M", irkit.default = 4096 : i64}, %N: index {irkit.name = "N", irkit.default = 1024 : i64},
                  %X: memref<?x?xf32> {irkit.name = "X", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>, irkit.align = 64 : i64},
                  %s: memref<?xf32> {irkit.name = "s", irkit.role = "output", irkit.shape = affine_map<()[s0, s1] -> (s0)>, irkit.align = 64 : i64}) {
  loop.for %d0 = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "d0", stage = "s"} {
    %0 = arith.constant 0.000000e+00 : f32
    loop.store %0, %s[affine_map<(d0) -> (d0)>] (%d0) : f32, memref<?xf32>
  }
  loop.for %io = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 16 {loop_name = "io", stage = "s", parallel} {
    loop.for %ii = affine_map<(d0) -> (d0)>(%io) to affine_map<(d0, d1) -> ((d0 + 16), d1)>(%io, %M) step 1 {loop_name = "ii", stage = "s"} {
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

// -----

// The initialisation of s is gone: an error at the statement.
// CHECK: {{.*}}rowsum.design:12:3: error: the initialisation to 0 of 's' is missing from the generated code
func.func @rowsum(%M: index {irkit.name = "M", irkit.default = 4096 : i64}, %N: index {irkit.name = "N", irkit.default = 1024 : i64},
                  %X: memref<?x?xf32> {irkit.name = "X", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>, irkit.align = 64 : i64},
                  %s: memref<?xf32> {irkit.name = "s", irkit.role = "output", irkit.shape = affine_map<()[s0, s1] -> (s0)>, irkit.align = 64 : i64}) {
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

// -----

// X read as column-major: an error at its layout entry.
// CHECK: {{.*}}rowsum.design:15:5: error: layout of X: document says row_major, generated code reads col_major
func.func @rowsum(%M: index {irkit.name = "M", irkit.default = 4096 : i64}, %N: index {irkit.name = "N", irkit.default = 1024 : i64},
                  %X: memref<?x?xf32, affine_map<(d0, d1) -> (d1, d0)>> {irkit.name = "X", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>, irkit.align = 64 : i64},
                  %s: memref<?xf32> {irkit.name = "s", irkit.role = "output", irkit.shape = affine_map<()[s0, s1] -> (s0)>, irkit.align = 64 : i64}) {
  loop.for %d0 = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "d0", stage = "s"} {
    %0 = arith.constant 0.000000e+00 : f32
    loop.store %0, %s[affine_map<(d0) -> (d0)>] (%d0) : f32, memref<?xf32>
  }
  loop.for %io = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 32 {loop_name = "io", stage = "s", parallel} {
    loop.for %ii = affine_map<(d0) -> (d0)>(%io) to affine_map<(d0, d1) -> ((d0 + 32), d1)>(%io, %M) step 1 {loop_name = "ii", stage = "s"} {
      loop.for %j = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", stage = "s", vector = 16 : i64} {
        %X_1 = loop.load %X[affine_map<(d0, d1) -> (d0, d1)>] (%ii, %j) : memref<?x?xf32, affine_map<(d0, d1) -> (d1, d0)>> -> f32
        %s_1 = loop.load %s[affine_map<(d0, d1) -> (d0)>] (%ii, %j) : memref<?xf32> -> f32
        %1 = arith.addf %s_1, %X_1 : f32
        loop.store %1, %s[affine_map<(d0, d1) -> (d0)>] (%ii, %j) : f32, memref<?xf32>
      }
    }
  }
  func.return
}

// CHECK-NOT: Traceback
