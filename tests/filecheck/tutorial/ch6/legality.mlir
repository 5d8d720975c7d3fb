// Chapter 6: what tutorial-interchange refuses to move, and what it keeps fixed.
// RUN: irkit-opt %s --split-input-file --plugin %S/../../../../examples/tutorial/ch6/interchange.py -p 'tutorial-interchange' | filecheck %s
// RUN: irkit-opt %s --split-input-file --plugin %S/../../../../examples/tutorial/ch6/interchange.py -p 'tutorial-interchange{report=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=WHY

// A stencil updating A in place: iteration (j, i) reads A[i - 1, j + 1], which
// iteration (j + 1, i - 1) writes later.  In i, j order the read would come after
// the write.  The model would like i outermost (rows are contiguous), but A is
// stored and read at different indices, so the band stays as it is.
func.func @stencil(%M: index {irkit.name = "M", irkit.default = 512 : i64}, %N: index {irkit.name = "N", irkit.default = 512 : i64}, %A: memref<?x?xf32> {irkit.name = "A", irkit.role = "output", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>}) attributes {irkit.hardware = "generic"} {
  loop.for %j = affine_map<() -> (0)>() to affine_map<(d0) -> (d0 - 1)>(%N) step 1 {loop_name = "j"} {
    loop.for %i = affine_map<() -> (1)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i"} {
      %a = loop.load %A[affine_map<(d0, d1) -> (d0 - 1, d1 + 1)>] (%i, %j) : memref<?x?xf32> -> f32
      %h = arith.constant 5.000000e-01 : f32
      %b = arith.mulf %a, %h : f32
      loop.store %b, %A[affine_map<(d0, d1) -> (d0, d1)>] (%i, %j) : f32, memref<?x?xf32>
    }
  }
  func.return
}
// CHECK-LABEL: func.func @stencil
// CHECK:       loop.for %j = {{.*}}{loop_name = "j"} {
// CHECK-NEXT:    loop.for %i = {{.*}}{loop_name = "i"} {
// WHY: tutorial-interchange: band (j, i): not permuted: buffer 'A' is stored and also read at another index

// -----

// A triangle: the bounds of j depend on i, so the loops cannot simply swap.
func.func @triangle(%N: index {irkit.name = "N", irkit.default = 512 : i64}, %A: memref<?x?xf32> {irkit.name = "A", irkit.role = "input", irkit.shape = affine_map<()[s0] -> (s0, s0)>}, %B: memref<?x?xf32> {irkit.name = "B", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0, s0)>}) attributes {irkit.hardware = "generic"} {
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "i"} {
    loop.for %j = affine_map<() -> (0)>() to affine_map<(d0) -> (d0 + 1)>(%i) step 1 {loop_name = "j"} {
      %a = loop.load %A[affine_map<(d0, d1) -> (d1, d0)>] (%i, %j) : memref<?x?xf32> -> f32
      loop.store %a, %B[affine_map<(d0, d1) -> (d0, d1)>] (%i, %j) : f32, memref<?x?xf32>
    }
  }
  func.return
}
// CHECK-LABEL: func.func @triangle
// CHECK:       loop.for %i = {{.*}}{loop_name = "i"} {
// CHECK-NEXT:    loop.for %j = {{.*}}{loop_name = "j"} {
// WHY: tutorial-interchange: band (i, j): not permuted: the bounds of loop 'j' depend on another loop of the band

// -----

// out[i + j]: two iterations meet at one element, in an order interchange would change.
func.func @diagonal(%N: index {irkit.name = "N", irkit.default = 512 : i64}, %A: memref<?x?xf32> {irkit.name = "A", irkit.role = "input", irkit.shape = affine_map<()[s0] -> (s0, s0)>}, %O: memref<?xf32> {irkit.name = "O", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (2 * s0)>}) attributes {irkit.hardware = "generic"} {
  loop.for %j = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j"} {
    loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "i"} {
      %a = loop.load %A[affine_map<(d0, d1) -> (d0, d1)>] (%i, %j) : memref<?x?xf32> -> f32
      %o = loop.load %O[affine_map<(d0, d1) -> (d0 + d1)>] (%i, %j) : memref<?xf32> -> f32
      %s = arith.addf %o, %a : f32
      loop.store %s, %O[affine_map<(d0, d1) -> (d0 + d1)>] (%i, %j) : f32, memref<?xf32>
    }
  }
  func.return
}
// CHECK-LABEL: func.func @diagonal
// CHECK:       loop.for %j = {{.*}}{loop_name = "j"} {
// CHECK-NEXT:    loop.for %i = {{.*}}{loop_name = "i"} {
// WHY: tutorial-interchange: band (j, i): not permuted: the index buffer 'O' is stored at does not name each loop of the band on its own

// -----

// A parallel loop is never moved: it ends the band above it, and the band (k, i)
// below it is free to change.
func.func @parallel(%M: index {irkit.name = "M", irkit.default = 512 : i64}, %N: index {irkit.name = "N", irkit.default = 512 : i64}, %K: index {irkit.name = "K", irkit.default = 512 : i64}, %A: memref<?x?xf32> {irkit.name = "A", irkit.role = "input", irkit.shape = affine_map<()[s0, s1, s2] -> (s0, s2)>}, %B: memref<?x?xf32> {irkit.name = "B", irkit.role = "input", irkit.shape = affine_map<()[s0, s1, s2] -> (s2, s1)>}, %C: memref<?x?xf32> {irkit.name = "C", irkit.role = "output", irkit.shape = affine_map<()[s0, s1, s2] -> (s0, s1)>}) attributes {irkit.hardware = "generic"} {
  loop.for %j = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", parallel} {
    loop.for %k = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%K) step 1 {loop_name = "k"} {
      loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i"} {
        %a = loop.load %A[affine_map<(d0, d1, d2) -> (d0, d2)>] (%i, %j, %k) : memref<?x?xf32> -> f32
        %b = loop.load %B[affine_map<(d0, d1, d2) -> (d2, d1)>] (%i, %j, %k) : memref<?x?xf32> -> f32
        %c = loop.load %C[affine_map<(d0, d1, d2) -> (d0, d1)>] (%i, %j, %k) : memref<?x?xf32> -> f32
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %c, %p : f32
        loop.store %s, %C[affine_map<(d0, d1, d2) -> (d0, d1)>] (%i, %j, %k) : f32, memref<?x?xf32>
      }
    }
  }
  func.return
}
// CHECK-LABEL: func.func @parallel
// CHECK:       loop.for %j = {{.*}}{loop_name = "j", parallel} {
// CHECK-NEXT:    loop.for %i = {{.*}}{loop_name = "i"} {
// CHECK-NEXT:      loop.for %k = {{.*}}{loop_name = "k"} {
// WHY: tutorial-interchange: band (k, i) -> (i, k): kernel predicted {{.*}} s -> {{.*}} s

// -----

// Two reduction loops: O[i] += A[i, l, k].  Contiguous reads want i, l, k, but
// k and l are both missing from O's index: swapping them would add the terms of
// each O[i] in another order (not bit-identical), so k stays outside l.
func.func @reductions(%N: index {irkit.name = "N", irkit.default = 128 : i64}, %A: memref<?x?x?xf32> {irkit.name = "A", irkit.role = "input", irkit.shape = affine_map<()[s0] -> (s0, s0, s0)>}, %O: memref<?xf32> {irkit.name = "O", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}) attributes {irkit.hardware = "generic"} {
  loop.for %k = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "k"} {
    loop.for %l = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "l"} {
      loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "i"} {
        %a = loop.load %A[affine_map<(d0, d1, d2) -> (d0, d1, d2)>] (%i, %l, %k) : memref<?x?x?xf32> -> f32
        %o = loop.load %O[affine_map<(d0) -> (d0)>] (%i) : memref<?xf32> -> f32
        %s = arith.addf %o, %a : f32
        loop.store %s, %O[affine_map<(d0) -> (d0)>] (%i) : f32, memref<?xf32>
      }
    }
  }
  func.return
}
// CHECK-LABEL: func.func @reductions
// CHECK:       loop.for %i = {{.*}}{loop_name = "i"} {
// CHECK-NEXT:    loop.for %k = {{.*}}{loop_name = "k"} {
// CHECK-NEXT:      loop.for %l = {{.*}}{loop_name = "l"} {
// WHY: tutorial-interchange: band (k, l, i) -> (i, k, l): kernel predicted {{.*}} s -> {{.*}} s
