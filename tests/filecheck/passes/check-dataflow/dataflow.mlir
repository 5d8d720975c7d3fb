// check-dataflow: every load of a temporary, register tile or output reads what
// an earlier store wrote.  Errors are at the directive of the reading loop (IR
// without a document), with a note at the loop of the store involved.
// RUN: not irkit-opt %s --split-input-file -p check-dataflow 2>/dev/null | filecheck %s --check-prefix=OK
// RUN: not irkit-opt %s --split-input-file -p check-dataflow 2>&1 | filecheck %s

// A tile of t computed over the 18 elements its consumer reads (16 and a halo of 2).
// OK: func.func @window
func.func @window(%N: index {irkit.name = "N"},
                  %x: memref<?xf32> {irkit.name = "x", irkit.role = "input", irkit.shape = affine_map<()[s0] -> ((s0 + 2))>},
                  %y: memref<?xf32> {irkit.name = "y", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}) {
  loop.for %io = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 16 {loop_name = "io", stage = "y", origin = "k.design:8:5"} {
    %t = loop.alloc() {tensor_name = "t", shape = affine_map<() -> (18)>} : memref<?xf32>
    loop.for %i = affine_map<(d0) -> (d0)>(%io) to affine_map<(d0, d1) -> ((d0 + 2), (d1 + 18))>(%N, %io) step 1 {loop_name = "i", stage = "t", origin = "k.design:9:5"} {
      %v = loop.load %x[affine_map<(d0) -> (d0)>] (%i) : memref<?xf32> -> f32
      loop.store %v, %t[affine_map<(d0, d1) -> ((d0 - d1))>] (%i, %io) : f32, memref<?xf32>
    }
    loop.for %ii = affine_map<(d0) -> (d0)>(%io) to affine_map<(d0, d1) -> ((d0 + 16), d1)>(%io, %N) step 1 {loop_name = "ii", stage = "y", origin = "k.design:8:5"} {
      %a = loop.load %t[affine_map<(d0, d1) -> ((d0 - d1))>] (%ii, %io) : memref<?xf32> -> f32
      %b = loop.load %t[affine_map<(d0, d1) -> ((d0 - d1 + 2))>] (%ii, %io) : memref<?xf32> -> f32
      %c = arith.addf %a, %b : f32
      loop.store %c, %y[affine_map<(d0) -> (d0)>] (%ii) : f32, memref<?xf32>
    }
    loop.free %t : memref<?xf32>
  }
  func.return
}

// -----

// The same tile computed over 16 elements: the halo is read but never written.
// CHECK: k.design:8:5: error: load from t[ii - io + 2] may read elements that are not written: index 0 (ii - io + 2) can leave the window [0, min(16, N - io + 2)) that the store before it writes
// CHECK: k.design:9:5: note: the store is in loop 'i', made by this directive
func.func @short(%N: index {irkit.name = "N"},
                 %x: memref<?xf32> {irkit.name = "x", irkit.role = "input", irkit.shape = affine_map<()[s0] -> ((s0 + 2))>},
                 %y: memref<?xf32> {irkit.name = "y", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}) {
  loop.for %io = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 16 {loop_name = "io", stage = "y", origin = "k.design:8:5"} {
    %t = loop.alloc() {tensor_name = "t", shape = affine_map<() -> (18)>} : memref<?xf32>
    loop.for %i = affine_map<(d0) -> (d0)>(%io) to affine_map<(d0, d1) -> ((d0 + 2), (d1 + 16))>(%N, %io) step 1 {loop_name = "i", stage = "t", origin = "k.design:9:5"} {
      %v = loop.load %x[affine_map<(d0) -> (d0)>] (%i) : memref<?xf32> -> f32
      loop.store %v, %t[affine_map<(d0, d1) -> ((d0 - d1))>] (%i, %io) : f32, memref<?xf32>
    }
    loop.for %ii = affine_map<(d0) -> (d0)>(%io) to affine_map<(d0, d1) -> ((d0 + 16), d1)>(%io, %N) step 1 {loop_name = "ii", stage = "y", origin = "k.design:8:5"} {
      %b = loop.load %t[affine_map<(d0, d1) -> ((d0 - d1 + 2))>] (%ii, %io) : memref<?xf32> -> f32
      loop.store %b, %y[affine_map<(d0) -> (d0)>] (%ii) : f32, memref<?xf32>
    }
    loop.free %t : memref<?xf32>
  }
  func.return
}

// -----

// The consumer before its producer: t is read before anything is stored to it.
// CHECK: k.design:8:5: error: load from t[ii - io] reads elements before they are written: no store to it comes before this load
// CHECK: k.design:9:5: note: the store is in loop 'i', made by this directive
func.func @swapped(%N: index {irkit.name = "N"},
                   %x: memref<?xf32> {irkit.name = "x", irkit.role = "input", irkit.shape = affine_map<()[s0] -> (s0)>},
                   %y: memref<?xf32> {irkit.name = "y", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}) {
  loop.for %io = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 16 {loop_name = "io", stage = "y", origin = "k.design:8:5"} {
    %t = loop.alloc() {tensor_name = "t", shape = affine_map<() -> (16)>} : memref<?xf32>
    loop.for %ii = affine_map<(d0) -> (d0)>(%io) to affine_map<(d0, d1) -> ((d0 + 16), d1)>(%io, %N) step 1 {loop_name = "ii", stage = "y", origin = "k.design:8:5"} {
      %a = loop.load %t[affine_map<(d0, d1) -> ((d0 - d1))>] (%ii, %io) : memref<?xf32> -> f32
      loop.store %a, %y[affine_map<(d0) -> (d0)>] (%ii) : f32, memref<?xf32>
    }
    loop.for %i = affine_map<(d0) -> (d0)>(%io) to affine_map<(d0, d1) -> ((d0 + 16), d1)>(%io, %N) step 1 {loop_name = "i", stage = "t", origin = "k.design:9:5"} {
      %v = loop.load %x[affine_map<(d0) -> (d0)>] (%i) : memref<?xf32> -> f32
      loop.store %v, %t[affine_map<(d0, d1) -> ((d0 - d1))>] (%i, %io) : f32, memref<?xf32>
    }
    loop.free %t : memref<?xf32>
  }
  func.return
}
