// schedule-split: `for k in [0, K)` becomes `for ko = 0 to K step F` around
// `for ki = ko to min(ko + F, K)`.  The inner loop's variable is the original
// index, so loads and stores are unchanged; the min keeps the last, partial
// block correct.  Both loops get origin = the directive's location.
// RUN: irkit-opt %s --split-input-file -p 'schedule-split{stage=s loop=k factor=128 outer=ko inner=ki loc="x.design:3:5"}' | filecheck %s
// RUN: irkit-opt %s --split-input-file -p 'schedule-split{stage=s loop=k factor=128 outer=ko inner=ki}' | irkit-opt --split-input-file | filecheck %s --check-prefix=RT
// RUN: irkit-opt %s --split-input-file -p 'schedule-split{stage=s loop=k factor=8}' | filecheck %s --check-prefix=STEP

func.func @rowsum(%M: index {irkit.name = "M"}, %K: index {irkit.name = "K"}, %X: memref<?x?xf32>, %s: memref<?xf32>) {
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "s"} {
    loop.for %k = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%K) step 1 {loop_name = "k", stage = "s"} {
      %x = loop.load %X[affine_map<(d0, d1) -> (d0, d1)>] (%i, %k) : memref<?x?xf32> -> f32
      %a = loop.load %s[affine_map<(d0, d1) -> (d0)>] (%i, %k) : memref<?xf32> -> f32
      %r = arith.addf %a, %x : f32
      loop.store %r, %s[affine_map<(d0, d1) -> (d0)>] (%i, %k) : f32, memref<?xf32>
    }
  }
  func.return
}

// CHECK:      loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "s"} {
// CHECK-NEXT:   loop.for %ko = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%K) step 128 {loop_name = "ko", stage = "s", origin = "x.design:3:5"} {
// CHECK-NEXT:     loop.for %ki = affine_map<(d0) -> (d0)>(%ko) to affine_map<(d0, d1) -> ((d0 + 128), d1)>(%ko, %K) step 1 {loop_name = "ki", stage = "s", origin = "x.design:3:5"} {
// CHECK-NEXT:       %x = loop.load %X[affine_map<(d0, d1) -> (d0, d1)>] (%i, %ki) : memref<?x?xf32> -> f32
// CHECK-NEXT:       %a = loop.load %s[affine_map<(d0, d1) -> (d0)>] (%i, %ki) : memref<?xf32> -> f32
// CHECK-NEXT:       %r = arith.addf %a, %x : f32
// CHECK-NEXT:       loop.store %r, %s[affine_map<(d0, d1) -> (d0)>] (%i, %ki) : f32, memref<?xf32>
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT: }
// RT:         loop.for %ko = {{.*}} step 128 {loop_name = "ko", stage = "s"} {
// RT-NEXT:      loop.for %ki = affine_map<(d0) -> (d0)>(%ko) to affine_map<(d0, d1) -> ((d0 + 128), d1)>(%ko, %K) step 1 {loop_name = "ki", stage = "s"} {

// -----

// A constant range that is a whole number of blocks needs no min.  Facts
// move with the split: parallel to the outer loop, vector and unroll to the
// inner one.

func.func @whole(%X: memref<?xf32>) {
  loop.for %k = affine_map<() -> (0)>() to affine_map<() -> (256)>() step 1 {loop_name = "k", stage = "s", parallel, unroll = 2 : i64, vector = 4 : i64} {
    %c = arith.constant 1.0 : f32
    loop.store %c, %X[affine_map<(d0) -> (d0)>] (%k) : f32, memref<?xf32>
  }
  func.return
}

// CHECK:      loop.for %ko = affine_map<() -> (0)>() to affine_map<() -> (256)>() step 128 {loop_name = "ko", stage = "s", parallel, origin = "x.design:3:5"} {
// CHECK-NEXT:   loop.for %ki = affine_map<(d0) -> (d0)>(%ko) to affine_map<(d0) -> ((d0 + 128))>(%ko) step 1 {loop_name = "ki", stage = "s", vector = 4 : i64, unroll = 2 : i64, origin = "x.design:3:5"} {
// CHECK-NEXT:     %c = arith.constant
// CHECK-NEXT:     loop.store %c, %X[affine_map<(d0) -> (d0)>] (%ki)

// -----

// A constant range that is not (300 = 2 * 128 + 44) keeps the min.

func.func @partial(%X: memref<?xf32>) {
  loop.for %k = affine_map<() -> (0)>() to affine_map<() -> (300)>() step 1 {loop_name = "k", stage = "s"} {
    %c = arith.constant 1.0 : f32
    loop.store %c, %X[affine_map<(d0) -> (d0)>] (%k) : f32, memref<?xf32>
  }
  func.return
}

// CHECK:      loop.for %ko = affine_map<() -> (0)>() to affine_map<() -> (300)>() step 128 {loop_name = "ko", stage = "s", origin = "x.design:3:5"} {
// CHECK-NEXT:   loop.for %ki = affine_map<(d0) -> (d0)>(%ko) to affine_map<(d0) -> ((d0 + 128), 300)>(%ko) step 1 {loop_name = "ki", stage = "s", origin = "x.design:3:5"} {

// -----

// A size the document assumes divisible (`assume { K % 256 == 0 }`) needs no min.

func.func @assumed(%K: index {irkit.name = "K"}, %X: memref<?xf32>) attributes {irkit.assume = {divisible = {K = 256 : i64}, aligned = {}, noalias = []}} {
  loop.for %k = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%K) step 1 {loop_name = "k", stage = "s"} {
    %c = arith.constant 1.0 : f32
    loop.store %c, %X[affine_map<(d0) -> (d0)>] (%k) : f32, memref<?xf32>
  }
  func.return
}

// CHECK:      loop.for %ko = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%K) step 128 {loop_name = "ko", stage = "s", origin = "x.design:3:5"} {
// CHECK-NEXT:   loop.for %ki = affine_map<(d0) -> (d0)>(%ko) to affine_map<(d0) -> ((d0 + 128))>(%ko) step 1 {loop_name = "ki", stage = "s", origin = "x.design:3:5"} {

// -----

// Splitting the inner loop of an earlier split: the new inner loop is cut
// by its own block and by the enclosing block and size (the old bound's
// results, after its own).

func.func @twice(%K: index {irkit.name = "K"}, %X: memref<?xf32>) {
  loop.for %kb = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%K) step 512 {loop_name = "kb", stage = "s"} {
    loop.for %k = affine_map<(d0) -> (d0)>(%kb) to affine_map<(d0, d1) -> ((d0 + 512), d1)>(%kb, %K) step 1 {loop_name = "k", stage = "s"} {
      %c = arith.constant 1.0 : f32
      loop.store %c, %X[affine_map<(d0) -> (d0)>] (%k) : f32, memref<?xf32>
    }
  }
  func.return
}

// CHECK:      loop.for %kb = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%K) step 512 {loop_name = "kb", stage = "s"} {
// CHECK-NEXT:   loop.for %ko = affine_map<(d0) -> (d0)>(%kb) to affine_map<(d0, d1) -> ((d0 + 512), d1)>(%kb, %K) step 128 {loop_name = "ko", stage = "s", origin = "x.design:3:5"} {
// CHECK-NEXT:     loop.for %ki = affine_map<(d0) -> (d0)>(%ko) to affine_map<(d0, d1, d2) -> ((d0 + 128), (d1 + 512), d2)>(%ko, %kb, %K) step 1 {loop_name = "ki", stage = "s", origin = "x.design:3:5"} {
// CHECK-NEXT:       %c = arith.constant
// CHECK-NEXT:       loop.store %c, %X[affine_map<(d0) -> (d0)>] (%ki)

// -----

// A loop with step 4 split by 8 steps by 32 outside and 4 inside.

func.func @stepped(%K: index {irkit.name = "K"}, %X: memref<?xf32>) {
  loop.for %k = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%K) step 4 {loop_name = "k", stage = "s"} {
    %c = arith.constant 1.0 : f32
    loop.store %c, %X[affine_map<(d0) -> (d0)>] (%k) : f32, memref<?xf32>
  }
  func.return
}

// STEP:      loop.for %ko = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%K) step 32 {loop_name = "ko", stage = "s"} {
// STEP-NEXT:   loop.for %ki = affine_map<(d0) -> (d0)>(%ko) to affine_map<(d0, d1) -> ((d0 + 32), d1)>(%ko, %K) step 4 {loop_name = "ki", stage = "s"} {
