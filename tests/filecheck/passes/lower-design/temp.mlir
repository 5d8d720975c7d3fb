// A temporary becomes a tensorop.alloc at the top of the kernel (shape over
// all sizes, alignment from the layout), and is not a kernel argument.
// Stages stay in document order.
// RUN: irkit-opt %s -p lower-design | filecheck %s

builtin.module {
  design.design "twostage" {
    design.size "M" = 8
    design.size "N" = 16
    design.tensor "x" : "f32" ["M", "N + 1"] "input"
    design.tensor "t" : "f32" ["M", "N + 1"] "temp"
    design.tensor "y" : "f32" ["M", "N"] "output"
    design.stmt "t" ["i", "j"] "=" {
      %0 = design.read "x" ["i", "j"] : f32
      %1 = math.exp %0 : f32
      design.yield %1 : f32
    }
    design.stmt "y" ["i", "j"] "=" {
      %2 = design.read "t" ["i", "j + 1"] : f32
      design.yield %2 : f32
    }
    design.layout "t" kind "row_major" align 32
  }
}

// CHECK:      func.func @twostage(%M: index {{.*}}, %N: index {{.*}}, %x: memref<?x?xf32> {{.*}}, %y: memref<?x?xf32> {irkit.name = "y", irkit.role = "output", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>}) attributes
// CHECK-NEXT:   %t = tensorop.alloc(%M, %N) {tensor_name = "t", shape = affine_map<()[s0, s1] -> (s0, (s1 + 1))>, align = 32 : i64} : memref<?x?xf32>
// CHECK-NEXT:   tensorop.generic ins(%x : memref<?x?xf32>) outs(%t : memref<?x?xf32>) sizes(%M, %N) attributes {stage = "t", loop_names = ["i", "j"], domain = affine_map<()[s0, s1] -> (s0, (s1 + 1))>
// CHECK:          math.exp
// CHECK:        tensorop.generic ins(%t : memref<?x?xf32>) outs(%y : memref<?x?xf32>) sizes(%M, %N) attributes {stage = "y", loop_names = ["i", "j"], domain = affine_map<()[s0, s1] -> (s0, s1)>, indexing_maps = [affine_map<(d0, d1) -> (d0, (d1 + 1))>, affine_map<(d0, d1) -> (d0, d1)>], iterators = ["parallel", "parallel"]} {
// CHECK-NEXT:   ^bb0(%[[T:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:     tensorop.yield %[[T]] : f32
// CHECK-NEXT:   }
// CHECK-NEXT:   func.return
