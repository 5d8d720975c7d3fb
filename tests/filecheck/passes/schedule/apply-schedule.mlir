// apply-schedule: the directives `lower-tensorop` hung on a stage's nests
// (`irkit.schedule`) are applied in document order, then the attribute is
// removed.  Every nest carrying the schedule gets it (here the two nests of
// one stage).  A fill nest has no schedule of its own; when the nest after it
// runs its buffer on the cores, the fill moves into that nest's parallel loop
// block by block (`io`, step 64: each iteration zeroes the rows it then
// updates), with the location of the update's own loop over the block (`ii`).
// Created and marked loops record the directive's location as `origin`.
// RUN: irkit-opt %s -p apply-schedule | filecheck %s
// RUN: irkit-opt %s -p apply-schedule | irkit-opt | filecheck %s

func.func @gemm(%M: index {irkit.name = "M"}, %N: index {irkit.name = "N"}, %K: index {irkit.name = "K"},
                %A: memref<?x?xf32> {irkit.name = "A", irkit.role = "input", irkit.shape = affine_map<()[s0, s1, s2] -> (s0, s2)>},
                %B: memref<?x?xf32> {irkit.name = "B", irkit.role = "input", irkit.shape = affine_map<()[s0, s1, s2] -> (s2, s1)>},
                %C: memref<?x?xf32> {irkit.name = "C", irkit.role = "output", irkit.shape = affine_map<()[s0, s1, s2] -> (s0, s1)>}) {
  loop.for %d0 = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "d0", stage = "C"} {
    loop.for %d1 = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "d1", stage = "C"} {
      %z = arith.constant 0.0 : f32
      loop.store %z, %C[affine_map<(d0, d1) -> (d0, d1)>] (%d0, %d1) : f32, memref<?x?xf32>
    }
  }
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "C", irkit.schedule = [
      {kind = "tile", loops = ["i", "j"], factors = array<i64: 64, 256>, outer = ["io", "jo"], inner = ["ii", "ji"], loc = "gemm.design:25:5"},
      {kind = "split", loop = "k", factor = 128 : i64, outer = "ko", inner = "ki", loc = "gemm.design:26:5"},
      {kind = "vectorize", loop = "ji", width = 16 : i64, loc = "gemm.design:27:5"},
      {kind = "reorder", loops = ["io", "jo", "ko", "ii", "ki", "ji"], loc = "gemm.design:28:5"},
      {kind = "parallel", loop = "io", loc = "gemm.design:29:5"},
      {kind = "unroll", loop = "ii", factor = 4 : i64, loc = "gemm.design:30:5"}]} {
    loop.for %j = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", stage = "C"} {
      loop.for %k = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%K) step 1 {loop_name = "k", stage = "C"} {
        %a = loop.load %A[affine_map<(d0, d1, d2) -> (d0, d2)>] (%i, %j, %k) : memref<?x?xf32> -> f32
        %b = loop.load %B[affine_map<(d0, d1, d2) -> (d2, d1)>] (%i, %j, %k) : memref<?x?xf32> -> f32
        %c = loop.load %C[affine_map<(d0, d1, d2) -> (d0, d1)>] (%i, %j, %k) : memref<?x?xf32> -> f32
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %c, %p : f32
        loop.store %s, %C[affine_map<(d0, d1, d2) -> (d0, d1)>] (%i, %j, %k) : f32, memref<?x?xf32>
      }
    }
  }
  loop.for %i2 = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "T", irkit.schedule = [
      {kind = "split", loop = "i", factor = 8 : i64, outer = "io", inner = "ii", loc = "t.design:7:5"},
      {kind = "parallel", loop = "io", loc = "t.design:8:5"}]} {
    loop.for %j2 = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", stage = "T"} {
      %z = arith.constant 0.0 : f32
      loop.store %z, %C[affine_map<(d0, d1) -> (d0, d1)>] (%i2, %j2) : f32, memref<?x?xf32>
    }
  }
  loop.for %i3 = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", stage = "T", irkit.schedule = [
      {kind = "split", loop = "i", factor = 8 : i64, outer = "io", inner = "ii", loc = "t.design:7:5"},
      {kind = "parallel", loop = "io", loc = "t.design:8:5"}]} {
    loop.for %j3 = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", stage = "T"} {
      %c3 = loop.load %C[affine_map<(d0, d1) -> (d0, d1)>] (%i3, %j3) : memref<?x?xf32> -> f32
      %t3 = arith.mulf %c3, %c3 : f32
      loop.store %t3, %C[affine_map<(d0, d1) -> (d0, d1)>] (%i3, %j3) : f32, memref<?x?xf32>
    }
  }
  func.return
}

// CHECK:      loop.for %io = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 64 {loop_name = "io", stage = "C", origin = "gemm.design:29:5", parallel} {
// CHECK-NEXT:   loop.for %d0i = affine_map<(d0) -> (d0)>(%io) to affine_map<(d0, d1) -> ((d0 + 64), d1)>(%io, %M) step 1 {loop_name = "d0i", stage = "C", origin = "gemm.design:30:5"} {
// CHECK-NEXT:     loop.for %d1 = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "d1", stage = "C"} {
// CHECK-NEXT:       %z = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:       loop.store %z, %C[affine_map<(d0, d1) -> (d0, d1)>] (%d0i, %d1) : f32, memref<?x?xf32>
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   loop.for %jo = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 256 {loop_name = "jo", stage = "C", origin = "gemm.design:25:5"} {
// CHECK-NEXT:     loop.for %ko = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%K) step 128 {loop_name = "ko", stage = "C", origin = "gemm.design:26:5"} {
// CHECK-NEXT:       loop.for %ii = affine_map<(d0) -> (d0)>(%io) to affine_map<(d0, d1) -> ((d0 + 64), d1)>(%io, %M) step 1 {loop_name = "ii", stage = "C", origin = "gemm.design:30:5", unroll = 4 : i64} {
// CHECK-NEXT:         loop.for %ki = affine_map<(d0) -> (d0)>(%ko) to affine_map<(d0, d1) -> ((d0 + 128), d1)>(%ko, %K) step 1 {loop_name = "ki", stage = "C", origin = "gemm.design:26:5"} {
// CHECK-NEXT:           loop.for %ji = affine_map<(d0) -> (d0)>(%jo) to affine_map<(d0, d1) -> ((d0 + 256), d1)>(%jo, %N) step 1 {loop_name = "ji", stage = "C", origin = "gemm.design:27:5", vector = 16 : i64} {
// CHECK-NEXT:             %a = loop.load %A[affine_map<(d0, d1, d2) -> (d0, d2)>] (%ii, %ji, %ki)
// CHECK-NEXT:             %b = loop.load %B[affine_map<(d0, d1, d2) -> (d2, d1)>] (%ii, %ji, %ki)
// CHECK-NEXT:             %c = loop.load %C[affine_map<(d0, d1, d2) -> (d0, d1)>] (%ii, %ji, %ki)
// CHECK-NEXT:             %p = arith.mulf %a, %b : f32
// CHECK-NEXT:             %s = arith.addf %c, %p : f32
// CHECK-NEXT:             loop.store %s, %C[affine_map<(d0, d1, d2) -> (d0, d1)>] (%ii, %ji, %ki)
// CHECK:      loop.for %io_1 = {{.*}} step 8 {loop_name = "io", stage = "T", origin = "t.design:8:5", parallel} {
// CHECK-NEXT:   loop.for %ii_1 = {{.*}} {loop_name = "ii", stage = "T", origin = "t.design:7:5"} {
// CHECK-NEXT:     loop.for %j2 = {{.*}} {loop_name = "j", stage = "T"} {
// CHECK:      loop.for %io_2 = {{.*}} step 8 {loop_name = "io", stage = "T", origin = "t.design:8:5", parallel} {
// CHECK-NEXT:   loop.for %ii_2 = {{.*}} {loop_name = "ii", stage = "T", origin = "t.design:7:5"} {
// CHECK-NEXT:     loop.for %j3 = {{.*}} {loop_name = "j", stage = "T"} {
// CHECK-NOT:  irkit.schedule
