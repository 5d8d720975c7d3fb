// What pack refuses, each reported at the directive's line of the
// document ("x.design:L:C" in the directive); the loop the directive names
// carries that location, so the expectation sits on its line.
// RUN: irkit-opt %s --split-input-file --verify-diagnostics -p apply-schedule

// pack of the tensor the stage writes: a copy made before the loop's body
// would go stale.
func.func @written(%M: index {irkit.name = "M"}, %X: memref<?x?xf32> {irkit.name = "X", irkit.role = "input", irkit.shape = affine_map<()[s0] -> (s0, 8)>}, %s: memref<?xf32> {irkit.name = "s", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}) {
  // expected-error@+1 {{pack s at i: 's' is written inside 'i' (s[i]), so a copy made before its body would go stale}}
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "s",
      irkit.schedule = [{kind = "pack", tensor = "s", loop = "i", loc = "x.design:7:5"}]} {
    loop.for %j = affine_map<() -> (0)>() to affine_map<() -> (8)>() step 1 {loop_name = "j", stage = "s"} {
      %x = loop.load %X[affine_map<(d0, d1) -> (d0, d1)>] (%i, %j) : memref<?x?xf32> -> f32
      %a = loop.load %s[affine_map<(d0, d1) -> (d0)>] (%i, %j) : memref<?xf32> -> f32
      %r = arith.addf %a, %x : f32
      loop.store %r, %s[affine_map<(d0, d1) -> (d0)>] (%i, %j) : f32, memref<?xf32>
    }
  } loc("x.design":7:5)
  func.return
}

// -----

// pack of a tensor the loop does not read.
func.func @unread(%M: index {irkit.name = "M"}, %X: memref<?x?xf32> {irkit.name = "X", irkit.role = "input", irkit.shape = affine_map<()[s0] -> (s0, 8)>}, %s: memref<?xf32> {irkit.name = "s", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}) {
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "s",
      irkit.schedule = [{kind = "pack", tensor = "X", loop = "j", loc = "x.design:7:5"}]} {
    // expected-error@+1 {{pack X at j: 'X' is not read inside 'j'}}
    loop.for %j = affine_map<() -> (0)>() to affine_map<() -> (8)>() step 1 {loop_name = "j", stage = "s"} {
      %c = arith.constant 1.0 : f32
      loop.store %c, %s[affine_map<(d0, d1) -> (d0)>] (%i, %j) : f32, memref<?xf32>
    } loc("x.design":7:5)
  }
  func.return
}

// -----

// pack needs the tile's extent to be a constant, or a size: j runs over [0, i).
func.func @triangle(%M: index {irkit.name = "M"}, %X: memref<?x?xf32> {irkit.name = "X", irkit.role = "input", irkit.shape = affine_map<()[s0] -> (s0, s0)>}, %s: memref<?xf32> {irkit.name = "s", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}) {
  // expected-error@+1 {{pack X at i: X[i, j] uses 'j', which does not run over a window of constant size ('j' runs from 0 to i); split or tile it first}}
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "s",
      irkit.schedule = [{kind = "pack", tensor = "X", loop = "i", loc = "x.design:7:5"}]} {
    loop.for %j = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%i) step 1 {loop_name = "j", stage = "s"} {
      %x = loop.load %X[affine_map<(d0, d1) -> (d0, d1)>] (%i, %j) : memref<?x?xf32> -> f32
      %a = loop.load %s[affine_map<(d0, d1) -> (d0)>] (%i, %j) : memref<?xf32> -> f32
      %r = arith.addf %a, %x : f32
      loop.store %r, %s[affine_map<(d0, d1) -> (d0)>] (%i, %j) : f32, memref<?xf32>
    }
  } loc("x.design":7:5)
  func.return
}

// -----

// A size-dependent extent (k over all of K) must be the outermost part of the
// layout: here the jammed-free loop j (constant window) is traversed outside k.
func.func @sized_inner(%K: index {irkit.name = "K"}, %X: memref<?x?xf32> {irkit.name = "X", irkit.role = "input", irkit.shape = affine_map<()[s0] -> (8, s0)>}, %s: memref<?xf32> {irkit.name = "s", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (1)>}) {
  // expected-error@+1 {{pack X at o: the tile's extent along dimension 2 of 'X' depends on the sizes, which works only for the outermost part of the layout; split or tile that loop first}}
  loop.for %o = affine_map<() -> (0)>() to affine_map<() -> (1)>() step 1 {loop_name = "o", stage = "s",
      irkit.schedule = [{kind = "pack", tensor = "X", loop = "o", loc = "x.design:7:5"}]} {
    loop.for %j = affine_map<() -> (0)>() to affine_map<() -> (8)>() step 1 {loop_name = "j", stage = "s"} {
      loop.for %k = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%K) step 1 {loop_name = "k", stage = "s"} {
        %x = loop.load %X[affine_map<(d0, d1) -> (d0, d1)>] (%j, %k) : memref<?x?xf32> -> f32
        %a = loop.load %s[affine_map<(d0) -> (d0)>] (%o) : memref<?xf32> -> f32
        %r = arith.addf %a, %x : f32
        loop.store %r, %s[affine_map<(d0) -> (d0)>] (%o) : f32, memref<?xf32>
      }
    }
  } loc("x.design":7:5)
  func.return
}
