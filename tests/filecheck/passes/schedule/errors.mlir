// What apply-schedule refuses, each reported at the directive's line of the
// document ("x.design:L:C" in the directive).  An op carrying that location
// (here the loop the directive names) puts the expectation on its line.
// RUN: irkit-opt %s --split-input-file --verify-diagnostics -p apply-schedule

// parallel on a reduction loop: the store to s[i] does not depend on k.
func.func @reduction(%M: index, %K: index, %X: memref<?x?xf32>, %s: memref<?xf32>) {
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "s",
      irkit.schedule = [{kind = "parallel", loop = "k", loc = "x.design:7:5"}]} {
    // expected-error@+1 {{parallel 'k': 'k' is a reduction loop of 's' (the store to s[i] does not depend on it)}}
    loop.for %k = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%K) step 1 {loop_name = "k", stage = "s"} {
      %x = loop.load %X[affine_map<(d0, d1) -> (d0, d1)>] (%i, %k) : memref<?x?xf32> -> f32
      %a = loop.load %s[affine_map<(d0, d1) -> (d0)>] (%i, %k) : memref<?xf32> -> f32
      %r = arith.addf %a, %x : f32
      loop.store %r, %s[affine_map<(d0, d1) -> (d0)>] (%i, %k) : f32, memref<?xf32>
    } loc("x.design":7:5)
  }
  func.return
}

// -----

// The outer loop of a split reduction loop is a reduction loop too.
func.func @split_reduction(%M: index, %K: index, %X: memref<?x?xf32>, %s: memref<?xf32>) {
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "s",
      irkit.schedule = [{kind = "split", loop = "k", factor = 4 : i64, outer = "ko", inner = "ki", loc = "x.design:7:5"},
                        {kind = "parallel", loop = "ko", loc = "x.design:8:5"}]} {
    // expected-error@+1 {{parallel 'ko': 'ko' is a reduction loop of 's' (the store to s[i] does not depend on it)}}
    loop.for %k = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%K) step 1 {loop_name = "k", stage = "s"} {
      %x = loop.load %X[affine_map<(d0, d1) -> (d0, d1)>] (%i, %k) : memref<?x?xf32> -> f32
      %a = loop.load %s[affine_map<(d0, d1) -> (d0)>] (%i, %k) : memref<?xf32> -> f32
      %r = arith.addf %a, %x : f32
      loop.store %r, %s[affine_map<(d0, d1) -> (d0)>] (%i, %k) : f32, memref<?xf32>
    } loc("x.design":8:5)
  }
  func.return
}

// -----

// A parallel loop inside another parallel loop.
func.func @nested(%M: index, %N: index, %Y: memref<?x?xf32>) {
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "Y",
      irkit.schedule = [{kind = "parallel", loop = "i", loc = "x.design:7:5"}, {kind = "parallel", loop = "j", loc = "x.design:8:5"}]} {
    // expected-error@+1 {{parallel 'j': 'j' is nested inside the parallel loop 'i'}}
    loop.for %j = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", stage = "Y"} {
      %z = arith.constant 0.0 : f32
      loop.store %z, %Y[affine_map<(d0, d1) -> (d0, d1)>] (%i, %j) : f32, memref<?x?xf32>
    } loc("x.design":8:5)
  }
  func.return
}

// -----

// parallel where one iteration reads what another writes: Y[i] = Y[i + 1] + 1.
func.func @race(%M: index, %Y: memref<?xf32>) {
  // expected-error@+1 {{parallel 'i': an iteration writes Y[i] and reads Y[i + 1], which another iteration may write}}
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "Y",
      irkit.schedule = [{kind = "parallel", loop = "i", loc = "x.design:7:5"}]} {
    %y = loop.load %Y[affine_map<(d0) -> (d0 + 1)>] (%i) : memref<?xf32> -> f32
    %one = arith.constant 1.0 : f32
    %r = arith.addf %y, %one : f32
    loop.store %r, %Y[affine_map<(d0) -> (d0)>] (%i) : f32, memref<?xf32>
  } loc("x.design":7:5)
  func.return
}

// -----

// reorder may not move the inner loop of a split outside its outer loop:
// the bounds of ki use ko.
func.func @bounds(%K: index, %N: index, %Y: memref<?x?xf32>) {
  loop.for %ko = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%K) step 8 {loop_name = "ko", stage = "Y",
      irkit.schedule = [{kind = "reorder", loops = ["ki", "ko"], loc = "x.design:7:5"}]} {
    // expected-error@+1 {{reorder ki, ko would move 'ki' outside 'ko', but the bounds of 'ki' depend on 'ko' ('ki' runs from ko to min(ko + 8, K))}}
    loop.for %ki = affine_map<(d0) -> (d0)>(%ko) to affine_map<(d0, d1) -> (d0 + 8, d1)>(%ko, %K) step 1 {loop_name = "ki", stage = "Y"} {
      %z = arith.constant 0.0 : f32
      loop.store %z, %Y[affine_map<(d0) -> (d0, 0)>] (%ki) : f32, memref<?x?xf32>
    } loc("x.design":7:5)
  }
  func.return
}

// -----

// reorder across a dependence: Y[i, j] = Y[i - 1, j] * 2 reads a row written
// by an earlier iteration of i.
func.func @dependence(%M: index, %N: index, %Y: memref<?x?xf32>) {
  // expected-error@+1 {{reorder j, i would reorder dependent iterations: 'Y' is written at Y[i, j] and read at Y[i - 1, j]}}
  loop.for %i = affine_map<() -> (1)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "Y",
      irkit.schedule = [{kind = "reorder", loops = ["j", "i"], loc = "x.design:7:5"}]} {
    loop.for %j = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", stage = "Y"} {
      %y = loop.load %Y[affine_map<(d0, d1) -> (d0 - 1, d1)>] (%i, %j) : memref<?x?xf32> -> f32
      %r = arith.addf %y, %y : f32
      loop.store %r, %Y[affine_map<(d0, d1) -> (d0, d1)>] (%i, %j) : f32, memref<?x?xf32>
    }
  } loc("x.design":7:5)
  func.return
}

// -----

// reorder of two loops that both revisit s[i] when the update is not an
// associative reduction (s = s * 0.5 + x depends on the order of the terms).
func.func @order(%M: index, %K: index, %X: memref<?x?x?xf32>, %s: memref<?xf32>) {
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "s",
      irkit.schedule = [{kind = "reorder", loops = ["l", "k"], loc = "x.design:7:5"}]} {
    // expected-error@+1 {{reorder l, k would swap 'k' and 'l', which both revisit the element s[i], and its update is not an associative reduction}}
    loop.for %k = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%K) step 1 {loop_name = "k", stage = "s"} {
      loop.for %l = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%K) step 1 {loop_name = "l", stage = "s"} {
        %x = loop.load %X[affine_map<(d0, d1, d2) -> (d0, d1, d2)>] (%i, %k, %l) : memref<?x?x?xf32> -> f32
        %a = loop.load %s[affine_map<(d0, d1, d2) -> (d0)>] (%i, %k, %l) : memref<?xf32> -> f32
        %h = arith.constant 0.5 : f32
        %m = arith.mulf %a, %h : f32
        %r = arith.addf %m, %x : f32
        loop.store %r, %s[affine_map<(d0, d1, d2) -> (d0)>] (%i, %k, %l) : f32, memref<?xf32>
      }
    } loc("x.design":7:5)
  }
  func.return
}

// -----

// reorder of loops that are not perfectly nested.
func.func @imperfect(%M: index, %N: index, %Y: memref<?x?xf32>, %s: memref<?xf32>) {
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "Y",
      irkit.schedule = [{kind = "reorder", loops = ["j", "i"], loc = "x.design:7:5"}]} {
    %z = arith.constant 0.0 : f32
    loop.store %z, %s[affine_map<(d0) -> (d0)>] (%i) : f32, memref<?xf32>
    // expected-error@+1 {{reorder j, i: 'i' and 'j' are not perfectly nested: 'i' holds other operations besides the next loop}}
    loop.for %j = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", stage = "Y"} {
      loop.store %z, %Y[affine_map<(d0, d1) -> (d0, d1)>] (%i, %j) : f32, memref<?x?xf32>
    } loc("x.design":7:5)
  }
  func.return
}

// -----

// vectorize a loop that is not innermost once the schedule is applied.
func.func @outer_vector(%M: index, %N: index, %Y: memref<?x?xf32>) {
  // expected-error@+1 {{vectorize 'i': only the innermost loop can be vectorized, and 'i' contains 'j' (order: i, j); reorder first}}
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "Y",
      irkit.schedule = [{kind = "vectorize", loop = "i", width = 8 : i64, loc = "x.design:7:5"}]} {
    loop.for %j = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", stage = "Y"} {
      %z = arith.constant 0.0 : f32
      loop.store %z, %Y[affine_map<(d0, d1) -> (d0, d1)>] (%i, %j) : f32, memref<?x?xf32>
    }
  } loc("x.design":7:5)
  func.return
}

// -----

// Names: an unknown loop, a new name already in use, a bad factor.
func.func @names(%M: index, %N: index, %Y: memref<?x?xf32>) {
  // expected-error@+1 {{unknown loop 'q' in stage 'Y'; its loops are: i, j}}
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "Y",
      irkit.schedule = [{kind = "unroll", loop = "q", factor = 2 : i64, loc = "x.design:7:5"}]} {
    loop.for %j = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", stage = "Y"} {
      %z = arith.constant 0.0 : f32
      loop.store %z, %Y[affine_map<(d0, d1) -> (d0, d1)>] (%i, %j) : f32, memref<?x?xf32>
    }
  } loc("x.design":7:5)
  func.return
}

// -----

func.func @clash(%M: index, %N: index, %Y: memref<?x?xf32>) {
  // expected-error@+1 {{new loop name 'j' is already used in stage 'Y'}}
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "Y",
      irkit.schedule = [{kind = "split", loop = "i", factor = 2 : i64, outer = "j", inner = "ii", loc = "x.design:7:5"}]} {
    loop.for %j = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", stage = "Y"} {
      %z = arith.constant 0.0 : f32
      loop.store %z, %Y[affine_map<(d0, d1) -> (d0, d1)>] (%i, %j) : f32, memref<?x?xf32>
    }
  } loc("x.design":7:5)
  func.return
}

// -----

func.func @factor(%M: index, %Y: memref<?xf32>) {
  // expected-error@+1 {{split factor must be positive, got 0}}
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "Y",
      irkit.schedule = [{kind = "split", loop = "i", factor = 0 : i64, loc = "x.design:7:5"}]} {
    %z = arith.constant 0.0 : f32
    loop.store %z, %Y[affine_map<(d0) -> (d0)>] (%i) : f32, memref<?xf32>
  } loc("x.design":7:5)
  func.return
}

// -----

// A directive kind irkit does not know (hand-written IR).
func.func @unbuilt(%M: index, %Y: memref<?xf32>) {
  // expected-error@+1 {{unknown schedule directive 'swizzle'; the directives are: compute_at, compute_root, interchange, pack, parallel, reorder, split, tile, unroll, unroll_jam, vectorize}}
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "Y",
      irkit.schedule = [{kind = "swizzle", loop = "i", loc = "x.design:7:5"}]} {
    %z = arith.constant 0.0 : f32
    loop.store %z, %Y[affine_map<(d0) -> (d0)>] (%i) : f32, memref<?xf32>
  } loc("x.design":7:5)
  func.return
}
