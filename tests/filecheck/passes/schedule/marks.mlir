// parallel, vectorize and unroll only set facts on the loop (and its origin);
// the nest is unchanged.  vectorize without a width takes the kernel's
// SIMD bits (an inline irkit.hardware's simd, else 512) over the bits of
// the element the loop stores.
// RUN: irkit-opt %s --split-input-file -p 'schedule-parallel{stage=s loop=i loc="r.design:4:5"},schedule-unroll{stage=s loop=i factor=4},schedule-vectorize{stage=s loop=j loc="r.design:5:5"}' | filecheck %s
// RUN: irkit-opt %s --split-input-file -p 'schedule-vectorize{stage=s loop=j width=3}' | filecheck %s --check-prefix=W3

func.func @rowsum(%M: index {irkit.name = "M"}, %N: index {irkit.name = "N"}, %X: memref<?x?xf32>, %s: memref<?xf32>) {
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "s"} {
    loop.for %j = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", stage = "s"} {
      %x = loop.load %X[affine_map<(d0, d1) -> (d0, d1)>] (%i, %j) : memref<?x?xf32> -> f32
      %a = loop.load %s[affine_map<(d0, d1) -> (d0)>] (%i, %j) : memref<?xf32> -> f32
      %r = arith.addf %a, %x : f32
      loop.store %r, %s[affine_map<(d0, d1) -> (d0)>] (%i, %j) : f32, memref<?xf32>
    }
  }
  func.return
}

// CHECK:      loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "s", parallel, origin = "r.design:4:5", unroll = 4 : i64} {
// CHECK-NEXT:   loop.for %j = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", stage = "s", vector = 16 : i64, origin = "r.design:5:5"} {
// CHECK-NEXT:     %x = loop.load
// W3:         loop.for %j = {{.*}} {loop_name = "j", stage = "s", vector = 3 : i64} {

// -----

// f64 on inline hardware with 256-bit SIMD: 4 lanes.

func.func @rowsum64(%M: index {irkit.name = "M"}, %N: index {irkit.name = "N"}, %X: memref<?x?xf64>, %s: memref<?xf64>) attributes {irkit.hardware = {cores = 2 : i64, simd = 256 : i64}} {
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "s"} {
    loop.for %j = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", stage = "s"} {
      %x = loop.load %X[affine_map<(d0, d1) -> (d0, d1)>] (%i, %j) : memref<?x?xf64> -> f64
      loop.store %x, %s[affine_map<(d0, d1) -> (d0)>] (%i, %j) : f64, memref<?xf64>
    }
  }
  func.return
}

// CHECK:      loop.for %j = {{.*}} {loop_name = "j", stage = "s", vector = 4 : i64, origin = "r.design:5:5"} {

// -----

// A named hardware description (not inline): 512 bits, 8 lanes of f64.

func.func @named(%M: index {irkit.name = "M"}, %N: index {irkit.name = "N"}, %X: memref<?x?xf64>, %s: memref<?x?xf64>) attributes {irkit.hardware = "generic"} {
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "s"} {
    loop.for %j = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", stage = "s"} {
      %x = loop.load %X[affine_map<(d0, d1) -> (d0, d1)>] (%i, %j) : memref<?x?xf64> -> f64
      loop.store %x, %s[affine_map<(d0, d1) -> (d0, d1)>] (%i, %j) : f64, memref<?x?xf64>
    }
  }
  func.return
}

// CHECK:      loop.for %j = {{.*}} {loop_name = "j", stage = "s", vector = 8 : i64, origin = "r.design:5:5"} {
