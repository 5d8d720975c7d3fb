// raise-loop: a plain loop nest becomes one generic.  Its domain is read off
// the loops' upper bounds, its indexing maps off the access maps (loop
// variables as dims, outermost first), its body off the scalar ops between
// the loads and the store; the loop names name the generic's loops.
// RUN: irkit-opt %s -p raise-loop | filecheck %s
// RUN: irkit-opt %s -p raise-loop,lower-tensorop | filecheck %s --check-prefix=BACK

func.func @saxpy(%N: index {irkit.name = "N"},
                 %x: memref<?xf32> {irkit.name = "x", irkit.role = "input", irkit.shape = affine_map<()[s0] -> (s0)>},
                 %y: memref<?xf32> {irkit.name = "y", irkit.role = "input", irkit.shape = affine_map<()[s0] -> (s0)>},
                 %z: memref<?xf32> {irkit.name = "z", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}) {
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "i", stage = "z"} {
    %a = loop.load %x[affine_map<(d0) -> (d0)>] (%i) : memref<?xf32> -> f32
    %b = loop.load %y[affine_map<(d0) -> (d0)>] (%i) : memref<?xf32> -> f32
    %two = arith.constant 2.0 : f32
    %m = arith.mulf %two, %a : f32
    %s = arith.subf %m, %b : f32
    loop.store %s, %z[affine_map<(d0) -> (d0)>] (%i) : f32, memref<?xf32>
  }
  func.return
}

// CHECK:      func.func @saxpy(%[[N:[^:]+]]: index {irkit.name = "N"}, %[[X:[^:]+]]: memref<?xf32> {irkit.name = "x", {{.*}}}, %[[Y:[^:]+]]: memref<?xf32> {irkit.name = "y", {{.*}}}, %[[Z:[^:]+]]: memref<?xf32> {irkit.name = "z", {{.*}}}) {
// CHECK-NEXT:   tensorop.generic ins(%[[X]], %[[Y]] : memref<?xf32>, memref<?xf32>) outs(%[[Z]] : memref<?xf32>) sizes(%[[N]]) attributes {stage = "z", loop_names = ["i"], domain = affine_map<()[s0] -> (s0)>, indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterators = ["parallel"]{{.*}}} {
// CHECK-NEXT:   ^bb0(%[[A:[^:]+]]: f32, %[[B:[^:]+]]: f32, %{{[^:]+}}: f32):
// CHECK-NEXT:     %[[TWO:.+]] = arith.constant 2.000000e+00 : f32
// CHECK-NEXT:     %[[M:.+]] = arith.mulf %[[TWO]], %[[A]] : f32
// CHECK-NEXT:     %[[S:.+]] = arith.subf %[[M]], %[[B]] : f32
// CHECK-NEXT:     tensorop.yield %[[S]] : f32
// CHECK-NEXT:   }
// CHECK-NEXT:   func.return
// CHECK-NOT:  loop.

// Lowered again, it is the same loop.
// BACK:       loop.for %[[I:.+]] = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%{{.+}}) step 1 {loop_name = "i", stage = "z"{{.*}}} {
// BACK-NEXT:    loop.load %{{.+}}[affine_map<(d0) -> (d0)>] (%[[I]])
// BACK-NEXT:    loop.load %{{.+}}[affine_map<(d0) -> (d0)>] (%[[I]])
// BACK-NEXT:    arith.constant 2.000000e+00
// BACK-NEXT:    arith.mulf
// BACK-NEXT:    arith.subf
// BACK-NEXT:    loop.store %{{.+}}, %{{.+}}[affine_map<(d0) -> (d0)>] (%[[I]])
