// A named statement becomes the named tensorop op: operands, parameters,
// the registry's loop names and domain (over the sizes), and the stage's
// schedule with the directives' locations.
// RUN: irkit-opt %s -p lower-design --split-input-file | filecheck %s

builtin.module {
  design.design "mm" {
    design.size "M" = 64
    design.size "N" = 32
    design.size "K" = 16
    design.tensor "A" : "f32" ["M", "K"] "input"
    design.tensor "B" : "f32" ["K", "N"] "input"
    design.tensor "C" : "f32" ["M", "N"] "output"
    design.named "C" = "matmul" ["A", "B"] {} loc("mm.design":6:3)
    design.schedule "C" {
      design.split "k" by 4 -> "ko", "ki" loc("mm.design":8:5)
      design.parallel "i" loc("mm.design":9:5)
    }
  }
}

// CHECK:      func.func @mm(
// CHECK-NEXT:   tensorop.matmul ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>) sizes(%M, %N, %K) {stage = "C", loop_names = ["i", "j", "k"], domain = affine_map<()[s0, s1, s2] -> (s0, s1, s2)>, schedule = [{kind = "split", loop = "k", factor = 4 : i64, outer = "ko", inner = "ki", loc = "mm.design:8:5"}, {kind = "parallel", loop = "i", loc = "mm.design:9:5"}]}
// CHECK-NEXT:   func.return

// -----

// conv2d, NHWC, stride 2: loops n, y, x, f, r, s, c; output extents
// (H + 2*padding - R) floordiv stride + 1.
builtin.module {
  design.design "cv" {
    design.size "H" = 9
    design.size "W" = 9
    design.tensor "I" : "f32" ["1", "H", "W", "3"] "input"
    design.tensor "Wt" : "f32" ["3", "3", "3", "8"] "input"
    design.tensor "O" : "f32" ["1", "(H - 1) / 2 + 1", "(W - 1) / 2 + 1", "8"] "output"
    design.named "O" = "conv2d" ["I", "Wt"] {stride = 2 : i64, padding = 1 : i64, layout = "nhwc"}
  }
}

// CHECK:      func.func @cv(
// CHECK-NEXT:   tensorop.conv2d ins(%I, %Wt : memref<?x?x?x?xf32>, memref<?x?x?x?xf32>) outs(%O : memref<?x?x?x?xf32>) sizes(%H, %W) {stage = "O", loop_names = ["n", "y", "x", "f", "r", "s", "c"], domain = affine_map<()[s0, s1] -> (1, (((s0 + -1) floordiv 2) + 1), (((s1 + -1) floordiv 2) + 1), 8, 3, 3, 3)>, params = {stride = 2 : i64, padding = 1 : i64, layout = "nhwc"}}
// CHECK-NEXT:   func.return

// -----

// softmax and transpose keep their parameters.
builtin.module {
  design.design "st" {
    design.size "M" = 4
    design.size "N" = 6
    design.tensor "X" : "f32" ["M", "N"] "input"
    design.tensor "T" : "f32" ["N", "M"] "temp"
    design.tensor "P" : "f32" ["N", "M"] "output"
    design.named "T" = "transpose" ["X"] {}
    design.named "P" = "softmax" ["T"] {axis = 0 : i64}
  }
}

// CHECK:      func.func @st(
// CHECK-NEXT:   %T = tensorop.alloc(%M, %N) {tensor_name = "T", shape = affine_map<()[s0, s1] -> (s1, s0)>} : memref<?x?xf32>
// CHECK-NEXT:   tensorop.transpose ins(%X : memref<?x?xf32>) outs(%T : memref<?x?xf32>) sizes(%M, %N) {stage = "T", loop_names = ["i", "j"], domain = affine_map<()[s0, s1] -> (s1, s0)>}
// CHECK-NEXT:   tensorop.softmax ins(%T : memref<?x?xf32>) outs(%P : memref<?x?xf32>) sizes(%M, %N) {stage = "P", loop_names = ["i", "j"], domain = affine_map<()[s0, s1] -> (s1, s0)>, params = {axis = 0 : i64}}
// CHECK-NEXT:   func.return
