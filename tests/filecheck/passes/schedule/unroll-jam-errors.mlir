// What unroll_jam refuses, each reported at the directive's line of the
// document ("x.design:L:C" in the directive); the loop the directive names
// carries that location, so the expectation sits on its line.
// RUN: irkit-opt %s --split-input-file --verify-diagnostics -p apply-schedule

// unroll_jam of the innermost loop: nothing to jam it into.
func.func @innermost(%X: memref<?x?xf32>, %s: memref<?xf32>) {
  loop.for %i = affine_map<() -> (0)>() to affine_map<() -> (8)>() step 1 {loop_name = "i", stage = "s",
      irkit.schedule = [{kind = "unroll_jam", loop = "j", factor = 4 : i64, loc = "x.design:7:5"}]} {
    // expected-error@+1 {{unroll_jam 'j': 'j' is the innermost loop, so there is nothing to jam it into; use unroll}}
    loop.for %j = affine_map<() -> (0)>() to affine_map<() -> (8)>() step 1 {loop_name = "j", stage = "s"} {
      %x = loop.load %X[affine_map<(d0, d1) -> (d0, d1)>] (%i, %j) : memref<?x?xf32> -> f32
      %a = loop.load %s[affine_map<(d0, d1) -> (d0)>] (%i, %j) : memref<?xf32> -> f32
      %r = arith.addf %a, %x : f32
      loop.store %r, %s[affine_map<(d0, d1) -> (d0)>] (%i, %j) : f32, memref<?xf32>
    } loc("x.design":7:5)
  }
  func.return
}

// -----

// The inner loop's bounds use the jammed loop (a triangle): the copies would
// need different trip counts.
func.func @triangle(%X: memref<?x?xf32>, %s: memref<?xf32>) {
  // expected-error@+1 {{unroll_jam 'i': the bounds of 'j' depend on 'i' ('j' runs from 0 to i)}}
  loop.for %i = affine_map<() -> (0)>() to affine_map<() -> (8)>() step 1 {loop_name = "i", stage = "s",
      irkit.schedule = [{kind = "unroll_jam", loop = "i", factor = 4 : i64, loc = "x.design:7:5"}]} {
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

// Every copy would write the same y[j] and the update is not an
// accumulation: jamming would change which value is left.
func.func @overwrite(%X: memref<?x?xf32>, %y: memref<?xf32>) {
  // expected-error@+1 {{unroll_jam 'i': the copies would all write y[j], which does not depend on 'i' and is not an accumulation (+, *, max, min): jamming would reorder its updates}}
  loop.for %i = affine_map<() -> (0)>() to affine_map<() -> (8)>() step 1 {loop_name = "i", stage = "y",
      irkit.schedule = [{kind = "unroll_jam", loop = "i", factor = 2 : i64, loc = "x.design:7:5"}]} {
    loop.for %j = affine_map<() -> (0)>() to affine_map<() -> (8)>() step 1 {loop_name = "j", stage = "y"} {
      %x = loop.load %X[affine_map<(d0, d1) -> (d0, d1)>] (%i, %j) : memref<?x?xf32> -> f32
      loop.store %x, %y[affine_map<(d0, d1) -> (d1)>] (%i, %j) : f32, memref<?xf32>
    }
  } loc("x.design":7:5)
  func.return
}

// -----

// A loop-shaping directive after unroll_jam: names no longer designate one
// loop once remainder loops and tile copies exist.
func.func @order(%X: memref<?x?xf32>, %s: memref<?xf32>) {
  // expected-error@+1 {{unroll_jam must come after the loop-shaping directives of schedule s (it adds remainder loops and copies, so a loop name would no longer name one loop); move 'vectorize j' (x.design:8:5) before it}}
  loop.for %i = affine_map<() -> (0)>() to affine_map<() -> (8)>() step 1 {loop_name = "i", stage = "s",
      irkit.schedule = [{kind = "unroll_jam", loop = "i", factor = 2 : i64, loc = "x.design:7:5"},
                        {kind = "vectorize", loop = "j", width = 8 : i64, loc = "x.design:8:5"}]} {
    loop.for %j = affine_map<() -> (0)>() to affine_map<() -> (8)>() step 1 {loop_name = "j", stage = "s"} {
      %x = loop.load %X[affine_map<(d0, d1) -> (d0, d1)>] (%i, %j) : memref<?x?xf32> -> f32
      %a = loop.load %s[affine_map<(d0, d1) -> (d0)>] (%i, %j) : memref<?xf32> -> f32
      %r = arith.addf %a, %x : f32
      loop.store %r, %s[affine_map<(d0, d1) -> (d0)>] (%i, %j) : f32, memref<?xf32>
    }
  } loc("x.design":7:5)
  func.return
}
