// raise-tensorop on a two-stage stencil with a temporary: the temporary's
// tensorop.alloc is a `temp` tensor, each generic an index statement whose
// reads are the indexing maps applied to the loop names; a named reduce or
// elementwise (tensorop level only) comes back as an index statement too.
// RUN: irkit-opt %s --split-input-file -p raise-tensorop --emit design | filecheck %s
// The printed document is one irkit reads back and lowers.
// RUN: irkit-opt %s --split-input-file -p raise-tensorop --emit design -o %t.design
// RUN: irkit-opt %t.design --split-input-file -p lower-design | filecheck %s --check-prefix=RELOWER

func.func @blur(%H: index {irkit.name = "H"}, %W: index {irkit.name = "W"},
                %inp: memref<?x?xf32> {irkit.name = "inp", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> (s0 + 2, s1 + 2)>},
                %out: memref<?x?xf32> {irkit.name = "out", irkit.role = "output", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>}) {
  %bx = tensorop.alloc(%H, %W) {tensor_name = "bx", shape = affine_map<()[s0, s1] -> (s0 + 2, s1)>} : memref<?x?xf32>
  tensorop.generic ins(%inp, %inp, %inp : memref<?x?xf32>, memref<?x?xf32>, memref<?x?xf32>) outs(%bx : memref<?x?xf32>) sizes(%H, %W) attributes {
      stage = "bx", loop_names = ["y", "x"], domain = affine_map<()[s0, s1] -> (s0 + 2, s1)>,
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1 + 1)>, affine_map<(d0, d1) -> (d0, d1 + 2)>, affine_map<(d0, d1) -> (d0, d1)>],
      iterators = ["parallel", "parallel"]} {
  ^bb0(%l: f32, %c: f32, %r: f32, %o: f32):
    %0 = arith.addf %l, %c : f32
    %1 = arith.addf %0, %r : f32
    %three = arith.constant 3.0 : f32
    %2 = arith.divf %1, %three : f32
    tensorop.yield %2 : f32
  }
  tensorop.generic ins(%bx, %bx : memref<?x?xf32>, memref<?x?xf32>) outs(%out : memref<?x?xf32>) sizes(%H, %W) attributes {
      stage = "out", loop_names = ["y", "x"], domain = affine_map<()[s0, s1] -> (s0, s1)>,
      indexing_maps = [affine_map<(d0, d1) -> (d0 + 1, d1)>, affine_map<(d0, d1) -> (d0 + 2, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
      iterators = ["parallel", "parallel"]} {
  ^bb0(%u: f32, %d: f32, %o: f32):
    %3 = arith.subf %u, %d : f32
    tensorop.yield %3 : f32
  }
  func.return
}

// CHECK:      design blur {
// CHECK-NEXT:   sizes { H, W }
// CHECK-EMPTY:
// CHECK-NEXT:   tensor inp : f32[H + 2, W + 2] input
// CHECK-NEXT:   tensor bx : f32[H + 2, W] temp
// CHECK-NEXT:   tensor out : f32[H, W] output
// CHECK-EMPTY:
// CHECK-NEXT:   bx[y, x] = (inp[y, x] + inp[y, x + 1] + inp[y, x + 2]) / 3
// CHECK-NEXT:   out[y, x] = bx[y + 1, x] - bx[y + 2, x]
// CHECK-EMPTY:
// CHECK-NEXT:   layout {
// CHECK-NEXT:     inp : row_major
// CHECK-NEXT:     bx : row_major
// CHECK-NEXT:     out : row_major
// CHECK-NEXT:   }
// CHECK-NEXT: }

// RELOWER:      func.func @blur(
// RELOWER:        tensorop.alloc(%H, %W) {tensor_name = "bx", shape = affine_map<()[s0, s1] -> ((s0 + 2), s1)>}
// RELOWER:        tensorop.generic {{.*}} attributes {stage = "bx", loop_names = ["y", "x"], domain = affine_map<()[s0, s1] -> ((s0 + 2), s1)>, indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, (d1 + 1))>, affine_map<(d0, d1) -> (d0, (d1 + 2))>, affine_map<(d0, d1) -> (d0, d1)>]
// RELOWER:        tensorop.generic {{.*}} attributes {stage = "out", loop_names = ["y", "x"], domain = affine_map<()[s0, s1] -> (s0, s1)>, indexing_maps = [affine_map<(d0, d1) -> ((d0 + 1), d1)>, affine_map<(d0, d1) -> ((d0 + 2), d1)>, affine_map<(d0, d1) -> (d0, d1)>]

// -----

func.func @rowsum(%M: index {irkit.name = "M"}, %N: index {irkit.name = "N"},
                  %X: memref<?x?xf32> {irkit.name = "X", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>},
                  %s: memref<?xf32> {irkit.name = "s", irkit.role = "output", irkit.shape = affine_map<()[s0, s1] -> (s0)>}) {
  tensorop.reduce ins(%X : memref<?x?xf32>) outs(%s : memref<?xf32>) sizes(%M, %N) {stage = "s", loop_names = ["i", "j"], domain = affine_map<()[s0, s1] -> (s0, s1)>, params = {dims = [1 : i64], kind = "add"}, schedule = [{kind = "parallel", loop = "i"}]}
  func.return
}

// CHECK:      design rowsum {
// CHECK:        s[i] += X[i, j]
// CHECK:        schedule s {
// CHECK-NEXT:     parallel i
// CHECK-NEXT:   }

// RELOWER:      func.func @rowsum(
// RELOWER:        tensorop.fill %s : memref<?xf32> sizes(%M, %N) {value = 0.000000e+00 : f32, stage = "s"}
// RELOWER-NEXT:   tensorop.generic {{.*}} iterators = ["parallel", "reduction"], schedule = [{kind = "parallel", loop = "i", loc = "{{.*}}"}]}
