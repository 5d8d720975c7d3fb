// Refused placements: each is a located error at the directive (here the
// `loc` option, which the producer's loop also carries, so the expectation
// sits on that loop's line).
// RUN: irkit-opt %s --split-input-file --verify-diagnostics -p 'schedule-compute-at{stage=p at=c loop=l loc="e.design:2:3"}'

// The consumer has no loop `l`.
func.func @k(%N: index {irkit.name = "N"}, %o: memref<?xf32> {irkit.name = "o", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}) {
  %p = loop.alloc(%N) {tensor_name = "p", shape = affine_map<()[s0] -> (s0)>} : memref<?xf32>
  // expected-error@+1 {{compute_at on loop 'l', which 'c' does not have; its loops are: i}}
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "i", stage = "p"} {
    %z = arith.constant 1.0 : f32
    loop.store %z, %p[affine_map<(d0) -> (d0)>] (%i) : f32, memref<?xf32>
  } loc("e.design":2:3)
  loop.for %i2 = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "i", stage = "c"} {
    %v = loop.load %p[affine_map<(d0) -> (d0)>] (%i2) : memref<?xf32> -> f32
    loop.store %v, %o[affine_map<(d0) -> (d0)>] (%i2) : f32, memref<?xf32>
  }
  loop.free %p : memref<?xf32>
  func.return
}

// -----

// The consumer's loop `l` reads another buffer, not p.
func.func @k(%N: index {irkit.name = "N"}, %a: memref<?xf32> {irkit.name = "a", irkit.role = "input", irkit.shape = affine_map<()[s0] -> (s0)>}, %o: memref<?xf32> {irkit.name = "o", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}) {
  %p = loop.alloc(%N) {tensor_name = "p", shape = affine_map<()[s0] -> (s0)>} : memref<?xf32>
  // expected-error@+1 {{compute_at c.l: 'c' does not read 'p' inside loop 'l', directly or through stages computed there}}
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "i", stage = "p"} {
    %z = arith.constant 1.0 : f32
    loop.store %z, %p[affine_map<(d0) -> (d0)>] (%i) : f32, memref<?xf32>
  } loc("e.design":2:3)
  loop.for %l = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "l", stage = "c"} {
    %v = loop.load %a[affine_map<(d0) -> (d0)>] (%l) : memref<?xf32> -> f32
    loop.store %v, %o[affine_map<(d0) -> (d0)>] (%l) : f32, memref<?xf32>
  }
  loop.free %p : memref<?xf32>
  func.return
}

// -----

// p is also read by stage q, outside c's loop l.
func.func @k(%N: index {irkit.name = "N"}, %o: memref<?xf32> {irkit.name = "o", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}, %o2: memref<?xf32> {irkit.name = "o2", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}) {
  %p = loop.alloc(%N) {tensor_name = "p", shape = affine_map<()[s0] -> (s0)>} : memref<?xf32>
  // expected-error@+1 {{compute_at c.l: 'p' is also read outside loop 'l' (stage 'q' reads p[i]); it must be computed where every reader can see it}}
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "i", stage = "p"} {
    %z = arith.constant 1.0 : f32
    loop.store %z, %p[affine_map<(d0) -> (d0)>] (%i) : f32, memref<?xf32>
  } loc("e.design":2:3)
  loop.for %i2 = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "i", stage = "q"} {
    %v = loop.load %p[affine_map<(d0) -> (d0)>] (%i2) : memref<?xf32> -> f32
    loop.store %v, %o2[affine_map<(d0) -> (d0)>] (%i2) : f32, memref<?xf32>
  }
  loop.for %l = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "l", stage = "c"} {
    %v = loop.load %p[affine_map<(d0) -> (d0)>] (%l) : memref<?xf32> -> f32
    loop.store %v, %o[affine_map<(d0) -> (d0)>] (%l) : f32, memref<?xf32>
  }
  loop.free %p : memref<?xf32>
  func.return
}

// -----

// l is a reduction loop of c accumulating into o[0], and p reads o: inside
// l, p would see partial sums.
func.func @k(%N: index {irkit.name = "N"}, %a: memref<?xf32> {irkit.name = "a", irkit.role = "input", irkit.shape = affine_map<()[s0] -> (s0)>}, %o: memref<?xf32> {irkit.name = "o", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}) {
  %p = loop.alloc(%N) {tensor_name = "p", shape = affine_map<()[s0] -> (s0)>} : memref<?xf32>
  // expected-error@+1 {{compute_at c.l: 'p' reads 'o', which stage 'c' writes at o[0] inside loop 'l': other iterations would see partial or overwritten values}}
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "i", stage = "p"} {
    %x = loop.load %o[affine_map<(d0) -> (0)>] (%i) : memref<?xf32> -> f32
    %y = loop.load %a[affine_map<(d0) -> (d0)>] (%i) : memref<?xf32> -> f32
    %z = arith.mulf %x, %y : f32
    loop.store %z, %p[affine_map<(d0) -> (d0)>] (%i) : f32, memref<?xf32>
  } loc("e.design":2:3)
  loop.for %l = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "l", stage = "c"} {
    %acc = loop.load %o[affine_map<(d0) -> (0)>] (%l) : memref<?xf32> -> f32
    %v = loop.load %p[affine_map<(d0) -> (d0)>] (%l) : memref<?xf32> -> f32
    %s = arith.addf %acc, %v : f32
    loop.store %s, %o[affine_map<(d0) -> (0)>] (%l) : f32, memref<?xf32>
  }
  loop.free %p : memref<?xf32>
  func.return
}

// -----

// The consumer reads p at an index computed by arithmetic: no footprint.
func.func @k(%N: index {irkit.name = "N"}, %o: memref<?xf32> {irkit.name = "o", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}) {
  %p = loop.alloc(%N) {tensor_name = "p", shape = affine_map<()[s0] -> (s0)>} : memref<?xf32>
  // expected-error@+1 {{the part of 'p' read by p[k] is not computable (index uses 'k', which is not a loop variable or size); compute_at needs affine indices}}
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "i", stage = "p"} {
    %z = arith.constant 1.0 : f32
    loop.store %z, %p[affine_map<(d0) -> (d0)>] (%i) : f32, memref<?xf32>
  } loc("e.design":2:3)
  loop.for %l = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "l", stage = "c"} {
    %k = arith.muli %l, %l : index
    %v = loop.load %p[affine_map<(d0) -> (d0)>] (%k) : memref<?xf32> -> f32
    loop.store %v, %o[affine_map<(d0) -> (d0)>] (%l) : f32, memref<?xf32>
  }
  loop.free %p : memref<?xf32>
  func.return
}

// -----

// p writes an output: only temporaries are placed.
func.func @k(%N: index {irkit.name = "N"}, %q: memref<?xf32> {irkit.name = "q", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}, %o: memref<?xf32> {irkit.name = "o", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}) {
  // expected-error@+1 {{'p' writes 'q', a kernel argument; compute_at and compute_root place temporaries}}
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "i", stage = "p"} {
    %z = arith.constant 1.0 : f32
    loop.store %z, %q[affine_map<(d0) -> (d0)>] (%i) : f32, memref<?xf32>
  } loc("e.design":2:3)
  loop.for %l = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "l", stage = "c"} {
    %v = loop.load %q[affine_map<(d0) -> (d0)>] (%l) : memref<?xf32> -> f32
    loop.store %v, %o[affine_map<(d0) -> (d0)>] (%l) : f32, memref<?xf32>
  }
  func.return
}

// -----

// A parallel loop of p would run inside the parallel loop l.
func.func @k(%M: index {irkit.name = "M"}, %N: index {irkit.name = "N"}, %o: memref<?x?xf32> {irkit.name = "o", irkit.role = "output", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>}) {
  %p = loop.alloc(%M, %N) {tensor_name = "p", shape = affine_map<()[s0, s1] -> (s0, s1)>} : memref<?x?xf32>
  // expected-error@+1 {{compute_at c.l: loop 'j' of 'p' is parallel, and it would run inside the parallel loop 'l' of 'c'}}
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "p"} {
    loop.for %j = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", stage = "p", parallel} {
      %z = arith.constant 1.0 : f32
      loop.store %z, %p[affine_map<(d0, d1) -> (d0, d1)>] (%i, %j) : f32, memref<?x?xf32>
    }
  } loc("e.design":2:3)
  loop.for %l = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "l", stage = "c", parallel} {
    loop.for %m = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "m", stage = "c"} {
      %v = loop.load %p[affine_map<(d0, d1) -> (d0, d1)>] (%l, %m) : memref<?x?xf32> -> f32
      loop.store %v, %o[affine_map<(d0, d1) -> (d0, d1)>] (%l, %m) : f32, memref<?x?xf32>
    }
  }
  loop.free %p : memref<?x?xf32>
  func.return
}

// -----

// p is computed after the consumer that reads it.
func.func @k(%N: index {irkit.name = "N"}, %o: memref<?xf32> {irkit.name = "o", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}) {
  %p = loop.alloc(%N) {tensor_name = "p", shape = affine_map<()[s0] -> (s0)>} : memref<?xf32>
  loop.for %l = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "l", stage = "c"} {
    %v = loop.load %p[affine_map<(d0) -> (d0)>] (%l) : memref<?xf32> -> f32
    loop.store %v, %o[affine_map<(d0) -> (d0)>] (%l) : f32, memref<?xf32>
  }
  // expected-error@+1 {{compute_at c.l: 'p' is computed after c.l, which reads it}}
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "i", stage = "p"} {
    %z = arith.constant 1.0 : f32
    loop.store %z, %p[affine_map<(d0) -> (d0)>] (%i) : f32, memref<?xf32>
  } loc("e.design":2:3)
  loop.free %p : memref<?xf32>
  func.return
}

// -----

// No stage p at all.
// expected-error@unknown {{no loops of stage 'p' in the module}}
func.func @k(%N: index {irkit.name = "N"}, %o: memref<?xf32> {irkit.name = "o", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}) {
  func.return
}
