// conv2d (cross-correlation).  With padding p > 0 the input is copied into
// the interior of a zero-filled temporary `<input>_pad` (the input's shape
// with H + 2p, W + 2p) by a generic over the input's shape (loops d0..d3,
// no schedule); then fill the output with 0 and one reduction generic:
// nchw  O[n, f, y, x] += I[n, c, y*st + r, x*st + s] * W[f, c, r, s]
// nhwc  O[n, y, x, f] += I[n, y*st + r, x*st + s, c] * W[r, s, c, f]
// RUN: irkit-opt %s -p generalize-tensorop --split-input-file | filecheck %s
// RUN: irkit-opt %s -p lower-tensorop --split-input-file | filecheck %s --check-prefix=LOOPS

func.func @conv(%N: index {irkit.name = "N"}, %C: index {irkit.name = "C"}, %F: index {irkit.name = "F"}, %H: index {irkit.name = "H"}, %W: index {irkit.name = "W"},
                %I: memref<?x?x?x?xf32> {irkit.name = "I", irkit.role = "input", irkit.shape = affine_map<()[s0, s1, s2, s3, s4] -> (s0, s1, s3, s4)>},
                %Wt: memref<?x?x?x?xf32> {irkit.name = "Wt", irkit.role = "input", irkit.shape = affine_map<()[s0, s1, s2, s3, s4] -> (s2, s1, 3, 3)>},
                %O: memref<?x?x?x?xf32> {irkit.name = "O", irkit.role = "output", irkit.shape = affine_map<()[s0, s1, s2, s3, s4] -> (s0, s2, s3, s4)>}) {
  tensorop.conv2d ins(%I, %Wt : memref<?x?x?x?xf32>, memref<?x?x?x?xf32>) outs(%O : memref<?x?x?x?xf32>) sizes(%N, %C, %F, %H, %W) {stage = "O", loop_names = ["n", "f", "y", "x", "c", "r", "s"], domain = affine_map<()[s0, s1, s2, s3, s4] -> (s0, s2, s3, s4, s1, 3, 3)>, params = {stride = 1 : i64, padding = 1 : i64, layout = "nchw"}, schedule = [{kind = "parallel", loop = "f"}]}
  func.return
}

// CHECK:      func.func @conv(
// CHECK-NEXT:   %I_pad = tensorop.alloc(%N, %C, %F, %H, %W) {tensor_name = "I_pad", shape = affine_map<()[s0, s1, s2, s3, s4] -> (s0, s1, (s3 + 2), (s4 + 2))>} : memref<?x?x?x?xf32>
// CHECK-NEXT:   tensorop.fill %I_pad : memref<?x?x?x?xf32> sizes(%N, %C, %F, %H, %W) {value = 0.000000e+00 : f32, stage = "O"}
// CHECK-NEXT:   tensorop.generic ins(%I : memref<?x?x?x?xf32>) outs(%I_pad : memref<?x?x?x?xf32>) sizes(%N, %C, %F, %H, %W) attributes {stage = "O", loop_names = ["d0", "d1", "d2", "d3"], domain = affine_map<()[s0, s1, s2, s3, s4] -> (s0, s1, s3, s4)>, indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, (d2 + 1), (d3 + 1))>], iterators = ["parallel", "parallel", "parallel", "parallel"]} {
// CHECK-NEXT:   ^bb0(%[[IN:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:     tensorop.yield %[[IN]] : f32
// CHECK-NEXT:   }
// CHECK-NEXT:   tensorop.fill %O : memref<?x?x?x?xf32> sizes(%N, %C, %F, %H, %W) {value = 0.000000e+00 : f32, stage = "O"}
// CHECK-NEXT:   tensorop.generic ins(%I_pad, %Wt : memref<?x?x?x?xf32>, memref<?x?x?x?xf32>) outs(%O : memref<?x?x?x?xf32>) sizes(%N, %C, %F, %H, %W) attributes {stage = "O", loop_names = ["n", "f", "y", "x", "c", "r", "s"], domain = affine_map<()[s0, s1, s2, s3, s4] -> (s0, s2, s3, s4, s1, 3, 3)>, indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, (d2 + d5), (d3 + d6))>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterators = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"], schedule = [{kind = "parallel", loop = "f"}]} {
// CHECK-NEXT:   ^bb0(%[[X:.*]]: f32, %[[WT:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK-NEXT:     %[[P:.*]] = arith.mulf %[[X]], %[[WT]] : f32
// CHECK-NEXT:     %[[S:.*]] = arith.addf %[[ACC]], %[[P]] : f32
// CHECK-NEXT:     tensorop.yield %[[S]] : f32
// CHECK-NEXT:   }
// CHECK-NEXT:   func.return

// The temporary is freed at the end of the kernel by lower-tensorop.
// LOOPS:      %I_pad = loop.alloc
// LOOPS:      loop.store %{{.*}}, %I_pad[affine_map<(d0, d1, d2, d3) -> (d0, d1, (d2 + 1), (d3 + 1))>]
// LOOPS:      loop.for %n = {{.*}}irkit.schedule = [{kind = "parallel", loop = "f"}]
// LOOPS:      loop.free %I_pad
// LOOPS-NEXT: func.return

// -----

// nhwc, stride 2, no padding: no temporary; the weights are [R, S, C, F].
// A tensor already named like the temporary would be is not shadowed.
func.func @conv(%H: index {irkit.name = "H"}, %W: index {irkit.name = "W"},
                %I: memref<?x?x?x?xf64> {irkit.name = "I", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> (1, s0, s1, 3)>},
                %Wt: memref<?x?x?x?xf64> {irkit.name = "Wt", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> (3, 3, 3, 8)>},
                %O: memref<?x?x?x?xf64> {irkit.name = "O", irkit.role = "output", irkit.shape = affine_map<()[s0, s1] -> (1, ((s0 - 3) floordiv 2) + 1, ((s1 - 3) floordiv 2) + 1, 8)>}) {
  tensorop.conv2d ins(%I, %Wt : memref<?x?x?x?xf64>, memref<?x?x?x?xf64>) outs(%O : memref<?x?x?x?xf64>) sizes(%H, %W) {stage = "O", loop_names = ["n", "y", "x", "f", "r", "s", "c"], domain = affine_map<()[s0, s1] -> (1, ((s0 - 3) floordiv 2) + 1, ((s1 - 3) floordiv 2) + 1, 8, 3, 3, 3)>, params = {stride = 2 : i64, layout = "nhwc"}}
  func.return
}

// CHECK:      func.func @conv(
// CHECK-NEXT:   tensorop.fill %O : memref<?x?x?x?xf64> sizes(%H, %W) {value = 0.000000e+00 : f64, stage = "O"}
// CHECK-NEXT:   tensorop.generic ins(%I, %Wt : memref<?x?x?x?xf64>, memref<?x?x?x?xf64>) outs(%O : memref<?x?x?x?xf64>) sizes(%H, %W) attributes {stage = "O", loop_names = ["n", "y", "x", "f", "r", "s", "c"], domain = affine_map<()[s0, s1] -> (1, (((s0 + -3) floordiv 2) + 1), (((s1 + -3) floordiv 2) + 1), 8, 3, 3, 3)>, indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, ((d1 * 2) + d4), ((d2 * 2) + d5), d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5, d6, d3)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterators = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} {
// CHECK-NEXT:   ^bb0(%{{.*}}: f64, %{{.*}}: f64, %{{.*}}: f64):
// CHECK-NEXT:     arith.mulf
// CHECK-NEXT:     arith.addf
// CHECK-NEXT:     tensorop.yield
// CHECK-NEXT:   }
// CHECK-NEXT:   func.return

// LOOPS:      loop.for %y = affine_map<() -> (0)>() to affine_map<(d0) -> ((((d0 + -3) floordiv 2) + 1))>(%H) step 1 {loop_name = "y", stage = "O"}
// LOOPS-NOT:  loop.free
// LOOPS:      // -----

// -----

// nhwc with padding: the spatial dims of an nhwc image are 1 and 2; the
// temporary's name avoids a tensor already called I_pad.
func.func @conv(%H: index {irkit.name = "H"}, %W: index {irkit.name = "W"},
                %I: memref<?x?x?x?xf32> {irkit.name = "I", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> (1, s0, s1, 3)>},
                %I_pad: memref<?x?x?x?xf32> {irkit.name = "I_pad", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> (3, 3, 3, 8)>},
                %O: memref<?x?x?x?xf32> {irkit.name = "O", irkit.role = "output", irkit.shape = affine_map<()[s0, s1] -> (1, s0, s1, 8)>}) {
  tensorop.conv2d ins(%I, %I_pad : memref<?x?x?x?xf32>, memref<?x?x?x?xf32>) outs(%O : memref<?x?x?x?xf32>) sizes(%H, %W) {stage = "O", loop_names = ["n", "y", "x", "f", "r", "s", "c"], domain = affine_map<()[s0, s1] -> (1, s0, s1, 8, 3, 3, 3)>, params = {padding = 1 : i64, layout = "nhwc"}}
  func.return
}

// CHECK:      func.func @conv(
// CHECK-NEXT:   %[[PAD:.*]] = tensorop.alloc(%H, %W) {tensor_name = "I_pad2", shape = affine_map<()[s0, s1] -> (1, (s0 + 2), (s1 + 2), 3)>} : memref<?x?x?x?xf32>
// CHECK-NEXT:   tensorop.fill %[[PAD]]
// CHECK-NEXT:   tensorop.generic ins(%I : memref<?x?x?x?xf32>) outs(%[[PAD]] : memref<?x?x?x?xf32>) sizes(%H, %W) attributes {stage = "O", loop_names = ["d0", "d1", "d2", "d3"], domain = affine_map<()[s0, s1] -> (1, s0, s1, 3)>, indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, (d1 + 1), (d2 + 1), d3)>]
// CHECK:        tensorop.fill %O
// CHECK-NEXT:   tensorop.generic ins(%[[PAD]], %I_pad : {{.*}}) outs(%O : memref<?x?x?x?xf32>) {{.*}} indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, (d1 + d4), (d2 + d5), d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5, d6, d3)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>]

// LOOPS:      loop.free %I_pad2
