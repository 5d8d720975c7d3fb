// check-bounds proves every load and store inside its buffer for all sizes
// (>= 1, multiples of their `assume` divisors) and every iteration; an access
// it cannot prove is an error at the directive that made the loop whose
// bounds allow it, with the largest (or smallest) index the loops allow.
// RUN: not irkit-opt %s --split-input-file -p check-bounds 2>/dev/null | filecheck %s --check-prefix=OK
// RUN: not irkit-opt %s --split-input-file -p check-bounds 2>&1 | filecheck %s

// A split with its tail: `ii` stops at min(io + 16, N).  Proved.
// OK: func.func @tail
func.func @tail(%N: index {irkit.name = "N"},
                %x: memref<?xf32> {irkit.name = "x", irkit.role = "input", irkit.shape = affine_map<()[s0] -> (s0)>},
                %y: memref<?xf32> {irkit.name = "y", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}) {
  loop.for %io = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 16 {loop_name = "io", stage = "y", origin = "k.design:9:5"} {
    loop.for %ii = affine_map<(d0) -> (d0)>(%io) to affine_map<(d0, d1) -> ((d0 + 16), d1)>(%io, %N) step 1 {loop_name = "ii", stage = "y", origin = "k.design:9:5"} {
      %v = loop.load %x[affine_map<(d0) -> (d0)>] (%ii) : memref<?xf32> -> f32
      loop.store %v, %y[affine_map<(d0) -> (d0)>] (%ii) : f32, memref<?xf32>
    }
  }
  func.return
}

// -----

// The tail lost its size clause: at N = 20, ii reaches 31.
// CHECK: k.design:9:5: error: load from x[ii] may be out of bounds: index 0 (ii) can reach N + 14, past its last element N - 1, for some sizes the document allows (the bounds of loop 'ii' allow it)
// CHECK: k.design:9:5: note: and 1 more access in the same loop: store to y[ii]
func.func @lost_tail(%N: index {irkit.name = "N"},
                     %x: memref<?xf32> {irkit.name = "x", irkit.role = "input", irkit.shape = affine_map<()[s0] -> (s0)>},
                     %y: memref<?xf32> {irkit.name = "y", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}) {
  loop.for %io = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 16 {loop_name = "io", stage = "y", origin = "k.design:8:5"} {
    loop.for %ii = affine_map<(d0) -> (d0)>(%io) to affine_map<(d0) -> ((d0 + 16))>(%io) step 1 {loop_name = "ii", stage = "y", origin = "k.design:9:5"} {
      %v = loop.load %x[affine_map<(d0) -> (d0)>] (%ii) : memref<?xf32> -> f32
      loop.store %v, %y[affine_map<(d0) -> (d0)>] (%ii) : f32, memref<?xf32>
    }
  }
  func.return
}

// -----

// No tail is needed when the document assumes N % 16 == 0: the split's inner
// loop runs a whole block, and io, a multiple of 16 below N, ends at N - 16.
// OK: func.func @divisible
// OK-NOT: func.func @block
func.func @divisible(%N: index {irkit.name = "N"},
                     %y: memref<?xf32> {irkit.name = "y", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>})
    attributes {irkit.assume = {divisible = {N = 16 : i64}, aligned = {}, noalias = []}} {
  loop.for %io = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 16 {loop_name = "io", stage = "y", origin = "k.design:8:5"} {
    loop.for %ii = affine_map<(d0) -> (d0)>(%io) to affine_map<(d0) -> ((d0 + 16))>(%io) step 1 {loop_name = "ii", stage = "y", origin = "k.design:9:5"} {
      %c = arith.constant 1.0 : f32
      loop.store %c, %y[affine_map<(d0) -> (d0)>] (%ii) : f32, memref<?xf32>
    }
  }
  func.return
}

// -----

// A register block of 6 rows stepping by 6 stops 5 rows short of M (its
// upper bound `M - 5`), so row ii + 5 is the last; with `M - 4` it is not.
// CHECK: k.design:12:5: error: store to y[ii + 5] may be out of bounds: index 0 (ii + 5) can reach M, past its last element M - 1, for some sizes the document allows (the bounds of loop 'ii' allow it)
func.func @block(%M: index {irkit.name = "M"},
                 %y: memref<?xf32> {irkit.name = "y", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}) {
  loop.for %ii = affine_map<() -> (0)>() to affine_map<(d0) -> ((d0 + -4))>(%M) step 6 {loop_name = "ii", stage = "y", origin = "k.design:12:5"} {
    %c = arith.constant 1.0 : f32
    loop.store %c, %y[affine_map<(d0) -> (d0)>] (%ii) : f32, memref<?xf32>
    loop.store %c, %y[affine_map<(d0) -> ((d0 + 5))>] (%ii) : f32, memref<?xf32>
  }
  func.return
}

// -----

// A temporary one row too small for the window its tile reads (34 rows: a tile
// of 32 and a halo of 2), and a register tile one element short.
// CHECK: k.design:5:5: error: store to t[i - io + 1] may be out of bounds: index 0 (i - io + 1) can reach 33, past its last element 32
// CHECK: k.design:6:5: error: store to acc[j] may be out of bounds: index 0 (j) can reach 15, past its last element 14
func.func @small(%N: index {irkit.name = "N"},
                 %y: memref<?xf32> {irkit.name = "y", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}) {
  loop.for %io = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 32 {loop_name = "io", stage = "y", origin = "k.design:4:5"} {
    %t = loop.alloc() {tensor_name = "t", shape = affine_map<() -> (33)>} : memref<?xf32>
    loop.for %i = affine_map<(d0) -> (d0)>(%io) to affine_map<(d0) -> ((d0 + 33))>(%io) step 1 {loop_name = "i", stage = "t", origin = "k.design:5:5"} {
      %c = arith.constant 1.0 : f32
      loop.store %c, %t[affine_map<(d0, d1) -> ((d0 - d1 + 1))>] (%i, %io) : f32, memref<?xf32>
    }
    %acc = loop.local {tensor_name = "acc"} : memref<15xf32>
    loop.for %j = affine_map<() -> (0)>() to affine_map<() -> (16)>() step 1 {loop_name = "j", stage = "y", origin = "k.design:6:5"} {
      %c = arith.constant 1.0 : f32
      loop.store %c, %acc[affine_map<(d0) -> (d0)>] (%j) : f32, memref<15xf32>
    }
    loop.free %t : memref<?xf32>
  }
  func.return
}

// -----

// Below zero: a halo read one element before the buffer.
// CHECK: k.design:3:5: error: load from x[i - 1] may be out of bounds: index 0 (i - 1) can be -1, below 0
func.func @below(%N: index {irkit.name = "N"},
                 %x: memref<?xf32> {irkit.name = "x", irkit.role = "input", irkit.shape = affine_map<()[s0] -> (s0)>},
                 %y: memref<?xf32> {irkit.name = "y", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}) {
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "i", stage = "y", origin = "k.design:3:5"} {
    %v = loop.load %x[affine_map<(d0) -> ((d0 - 1))>] (%i) : memref<?xf32> -> f32
    loop.store %v, %y[affine_map<(d0) -> (d0)>] (%i) : f32, memref<?xf32>
  }
  func.return
}
