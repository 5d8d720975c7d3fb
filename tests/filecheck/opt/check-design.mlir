// Hand-written design IR goes through check-design unchanged, in custom,
// generic and located form.
// RUN: irkit-opt %s -p check-design | filecheck %s
// RUN: irkit-opt %s -p check-design --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: irkit-opt %s -p check-design --print-debuginfo | filecheck %s --check-prefix=LOC
// RUN: irkit-opt %s -p check-design --emit design | filecheck %s --check-prefix=DESIGN

builtin.module {
  design.design "scale" {
    design.size "N" = 64 loc("scale.design":2:11)
    design.tensor "a" : "f32" ["N"] "input" loc("scale.design":3:3)
    design.tensor "b" : "f32" ["N"] "output" loc("scale.design":4:3)
    design.stmt "b" ["i"] "=" {
      %0 = design.read "a" ["i"] : f32 loc("scale.design":5:10)
      %1 = arith.addf %0, %0 : f32 loc("scale.design":5:10)
      design.yield %1 : f32 loc("scale.design":5:10)
    } loc("scale.design":5:3)
    design.schedule "b" {
      design.split "i" by 16 -> "io", "ii" loc("scale.design":7:5)
      design.parallel "io" loc("scale.design":8:5)
    } loc("scale.design":6:3)
  } loc("scale.design":1:1)
}

// CHECK:      builtin.module {
// CHECK-NEXT:   design.design "scale" {
// CHECK-NEXT:     design.size "N" = 64
// CHECK-NEXT:     design.tensor "a" : "f32" ["N"] "input"
// CHECK-NEXT:     design.tensor "b" : "f32" ["N"] "output"
// CHECK-NEXT:     design.stmt "b" ["i"] "=" {
// CHECK-NEXT:       %[[A:.*]] = design.read "a" ["i"] : f32
// CHECK-NEXT:       %[[S:.*]] = arith.addf %[[A]], %[[A]] : f32
// CHECK-NEXT:       design.yield %[[S]] : f32
// CHECK-NEXT:     }
// CHECK-NEXT:     design.schedule "b" {
// CHECK-NEXT:       design.split "i" by 16 -> "io", "ii"
// CHECK-NEXT:       design.parallel "io"
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT: }

// GENERIC: "design.split"() <{loop = "i", factor = 16 : i64, outer = "io", inner = "ii"}> : () -> ()

// LOC: design.split "i" by 16 -> "io", "ii" loc("scale.design":7:5)
// LOC: } loc("scale.design":1:1)

// DESIGN:      design scale {
// DESIGN:        b[i] = a[i] + a[i]
// DESIGN:        schedule b {
// DESIGN-NEXT:     split i by 16 -> io, ii
// DESIGN-NEXT:     parallel io
// DESIGN-NEXT:   }
