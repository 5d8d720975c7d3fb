// Explicit SIMD: vector loops of constant trip count become blocks of GCC
// vector-extension code (T / W vectors at once), and a loop.local accessed only
// there (and at constant indices elsewhere) becomes vector variables: the
// register tile.  Its update acc = acc + a * b is one fused multiply-add per
// vector (the intrinsic where the target has FMA).  A local used in a loop of variable trip count stays an array,
// and that loop keeps the `#pragma omp simd` path.
// RUN: irkit-opt %s --split-input-file --emit c | filecheck %s

func.func @tile(%K: index {irkit.name = "K", irkit.default = 4 : i64},
    %A: memref<?x?xf32> {irkit.name = "A", irkit.role = "input", irkit.shape = affine_map<()[s0] -> (2, s0)>},
    %B: memref<?x?xf32> {irkit.name = "B", irkit.role = "input", irkit.shape = affine_map<()[s0] -> (s0, 16)>},
    %C: memref<?x?xf32> {irkit.name = "C", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (2, 16)>}) {
  %acc = loop.local {tensor_name = "acc"} : memref<16xf32>
  loop.for %j = affine_map<() -> (0)>() to affine_map<() -> (16)>() step 1 {loop_name = "j", vector = 8 : i64} {
    %c = loop.load %C[affine_map<(d0) -> (0, d0)>] (%j) : memref<?x?xf32> -> f32
    loop.store %c, %acc[affine_map<(d0) -> (d0)>] (%j) : f32, memref<16xf32>
  }
  loop.for %k = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%K) step 1 {loop_name = "k"} {
    loop.for %j2 = affine_map<() -> (0)>() to affine_map<() -> (16)>() step 1 {loop_name = "j", vector = 8 : i64} {
      %a = loop.load %A[affine_map<(d0, d1) -> (0, d1)>] (%j2, %k) : memref<?x?xf32> -> f32
      %b = loop.load %B[affine_map<(d0, d1) -> (d1, d0)>] (%j2, %k) : memref<?x?xf32> -> f32
      %x = loop.load %acc[affine_map<(d0, d1) -> (d0)>] (%j2, %k) : memref<16xf32> -> f32
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %x, %p : f32
      loop.store %s, %acc[affine_map<(d0, d1) -> (d0)>] (%j2, %k) : f32, memref<16xf32>
    }
  }
  %l = loop.load %acc[affine_map<() -> (11)>] () : memref<16xf32> -> f32
  loop.store %l, %C[affine_map<() -> (1, 0)>] () : f32, memref<?x?xf32>
  loop.for %j3 = affine_map<() -> (0)>() to affine_map<() -> (16)>() step 1 {loop_name = "j", vector = 8 : i64} {
    %v = loop.load %acc[affine_map<(d0) -> (d0)>] (%j3) : memref<16xf32> -> f32
    loop.store %v, %C[affine_map<(d0) -> (0, d0)>] (%j3) : f32, memref<?x?xf32>
  }
  func.return
}

// CHECK:      typedef float irkit_f32x8 __attribute__((vector_size(32)));
// CHECK-NEXT: #if (defined(__x86_64__) || defined(__i386__)) && defined(__FMA__) && defined(__AVX__)
// CHECK-NEXT: #include <immintrin.h>
// CHECK-NEXT: #define irkit_fma_f32x8(a, b, c) ((irkit_f32x8)_mm256_fmadd_ps((__m256)(a), (__m256)(b), (__m256)(c)))
// CHECK-NEXT: #else
// CHECK-NEXT: #define irkit_fma_f32x8(a, b, c) ((a) * (b) + (c))  /* no FMA instruction: two roundings */
// CHECK-NEXT: #endif
// CHECK:      void irkit_tile(int64_t K, const float *restrict A, const float *restrict B, float *restrict C)
// CHECK:          /* local acc[16]: 2 vector registers of 8 */
// CHECK-NEXT:     irkit_f32x8 acc_0 = {0}, acc_1 = {0};
// CHECK-NEXT:     /* loop j, vector 8: 2 vectors of 8 */
// CHECK-NEXT:     {
// CHECK-NEXT:         const int64_t j = 0;
// CHECK-NEXT:         irkit_f32x8 c;
// CHECK-NEXT:         __builtin_memcpy(&c, &C[j], sizeof c);
// CHECK-NEXT:         irkit_f32x8 c_1;
// CHECK-NEXT:         __builtin_memcpy(&c_1, &C[j + 8], sizeof c_1);
// CHECK-NEXT:         acc_0 = c;
// CHECK-NEXT:         acc_1 = c_1;
// CHECK-NEXT:     }
// CHECK-NEXT:     for (int64_t k = 0; k < K; k += 1) {
// CHECK-NEXT:         /* loop j, vector 8: 2 vectors of 8 */
// CHECK-NEXT:         {
// CHECK-NEXT:             const int64_t j = 0;
// CHECK-NEXT:             const float a = A[k];
// CHECK-NEXT:             irkit_f32x8 b;
// CHECK-NEXT:             __builtin_memcpy(&b, &B[16*k + j], sizeof b);
// CHECK-NEXT:             irkit_f32x8 b_1;
// CHECK-NEXT:             __builtin_memcpy(&b_1, &B[16*k + j + 8], sizeof b_1);
// CHECK-NEXT:             const irkit_f32x8 x = acc_0;
// CHECK-NEXT:             const irkit_f32x8 x_1 = acc_1;
// CHECK-NEXT:             const irkit_f32x8 a_s = {a, a, a, a, a, a, a, a};
// CHECK-NEXT:             const irkit_f32x8 s = irkit_fma_f32x8(a_s, b, x);
// CHECK-NEXT:             const irkit_f32x8 s_1 = irkit_fma_f32x8(a_s, b_1, x_1);
// CHECK-NEXT:             acc_0 = s;
// CHECK-NEXT:             acc_1 = s_1;
// CHECK-NEXT:         }
// CHECK-NEXT:     }
// CHECK-NEXT:     const float l = acc_1[3];
// CHECK-NEXT:     C[16*1] = l;
// CHECK-NEXT:     /* loop j, vector 8: 2 vectors of 8 */
// CHECK-NEXT:     {
// CHECK-NEXT:         const int64_t j = 0;
// CHECK-NEXT:         const irkit_f32x8 v = acc_0;
// CHECK-NEXT:         const irkit_f32x8 v_1 = acc_1;
// CHECK-NEXT:         __builtin_memcpy(&C[j], &v, sizeof v);
// CHECK-NEXT:         __builtin_memcpy(&C[j + 8], &v_1, sizeof v_1);
// CHECK-NEXT:     }
// CHECK-NEXT: }

// -----

func.func @partial(%N: index {irkit.name = "N", irkit.default = 4 : i64},
    %C: memref<?xf32> {irkit.name = "C", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}) {
  %acc = loop.local {tensor_name = "acc"} : memref<16xf32>
  loop.for %j = affine_map<() -> (0)>() to affine_map<(d0) -> (16, d0)>(%N) step 1 {loop_name = "j", vector = 8 : i64} {
    %c = arith.constant 2.0 : f32
    loop.store %c, %acc[affine_map<(d0) -> (d0)>] (%j) : f32, memref<16xf32>
  }
  loop.for %j2 = affine_map<() -> (0)>() to affine_map<(d0) -> (16, d0)>(%N) step 1 {loop_name = "j", vector = 8 : i64} {
    %v = loop.load %acc[affine_map<(d0) -> (d0)>] (%j2) : memref<16xf32> -> f32
    loop.store %v, %C[affine_map<(d0) -> (d0)>] (%j2) : f32, memref<?xf32>
  }
  func.return
}

// CHECK:      void irkit_partial(int64_t N, float *restrict C)
// CHECK-NEXT: {
// CHECK-NEXT:     float acc[16];
// CHECK-NEXT:     /* loop j, vector 8 */
// CHECK-NEXT:     #pragma omp simd simdlen(8)
// CHECK-NEXT:     for (int64_t j = 0; j < irkit_min_i64(16, N); j += 1) {
// CHECK-NEXT:         acc[j] = 2.0f;

// -----

// Lanes across rows: a register tile whose lanes run along C's rows (a column of
// C, strided in the vector loop) is loaded and stored one lane at a time; the two
// columns the copies touch are apart (they differ in a dimension the lanes do not
// move), so the loops stay explicit vectors and the tile stays in registers.
func.func @lanes(%K: index {irkit.name = "K", irkit.default = 4 : i64},
    %A: memref<?x?xf32> {irkit.name = "A", irkit.role = "input", irkit.shape = affine_map<()[s0] -> (s0, 8)>},
    %b: memref<?xf32> {irkit.name = "b", irkit.role = "input", irkit.shape = affine_map<()[s0] -> (s0)>},
    %C: memref<?x?xf32> {irkit.name = "C", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (8, 2)>}) {
  %acc0 = loop.local {tensor_name = "acc0"} : memref<8xf32>
  %acc1 = loop.local {tensor_name = "acc1"} : memref<8xf32>
  loop.for %i = affine_map<() -> (0)>() to affine_map<() -> (8)>() step 1 {loop_name = "i", vector = 8 : i64} {
    %c0 = loop.load %C[affine_map<(d0) -> (d0, 0)>] (%i) : memref<?x?xf32> -> f32
    loop.store %c0, %acc0[affine_map<(d0) -> (d0)>] (%i) : f32, memref<8xf32>
    %c1 = loop.load %C[affine_map<(d0) -> (d0, 1)>] (%i) : memref<?x?xf32> -> f32
    loop.store %c1, %acc1[affine_map<(d0) -> (d0)>] (%i) : f32, memref<8xf32>
  }
  loop.for %k = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%K) step 1 {loop_name = "k"} {
    loop.for %i2 = affine_map<() -> (0)>() to affine_map<() -> (8)>() step 1 {loop_name = "i", vector = 8 : i64} {
      %a = loop.load %A[affine_map<(d0, d1) -> (d1, d0)>] (%i2, %k) : memref<?x?xf32> -> f32
      %bv = loop.load %b[affine_map<(d0, d1) -> (d1)>] (%i2, %k) : memref<?xf32> -> f32
      %x0 = loop.load %acc0[affine_map<(d0, d1) -> (d0)>] (%i2, %k) : memref<8xf32> -> f32
      %p0 = arith.mulf %a, %bv : f32
      %s0 = arith.addf %x0, %p0 : f32
      loop.store %s0, %acc0[affine_map<(d0, d1) -> (d0)>] (%i2, %k) : f32, memref<8xf32>
      %x1 = loop.load %acc1[affine_map<(d0, d1) -> (d0)>] (%i2, %k) : memref<8xf32> -> f32
      %s1 = arith.addf %x1, %a : f32
      loop.store %s1, %acc1[affine_map<(d0, d1) -> (d0)>] (%i2, %k) : f32, memref<8xf32>
    }
  }
  loop.for %i3 = affine_map<() -> (0)>() to affine_map<() -> (8)>() step 1 {loop_name = "i", vector = 8 : i64} {
    %r0 = loop.load %acc0[affine_map<(d0) -> (d0)>] (%i3) : memref<8xf32> -> f32
    loop.store %r0, %C[affine_map<(d0) -> (d0, 0)>] (%i3) : f32, memref<?x?xf32>
    %r1 = loop.load %acc1[affine_map<(d0) -> (d0)>] (%i3) : memref<8xf32> -> f32
    loop.store %r1, %C[affine_map<(d0) -> (d0, 1)>] (%i3) : f32, memref<?x?xf32>
  }
  func.return
}

// CHECK:      void irkit_lanes(int64_t K, const float *restrict A, const float *restrict b, float *restrict C)
// CHECK-NEXT: {
// CHECK-NEXT:     /* local acc0[8]: 1 vector registers of 8 */
// CHECK-NEXT:     irkit_f32x8 acc0_0 = {0};
// CHECK-NEXT:     /* local acc1[8]: 1 vector registers of 8 */
// CHECK-NEXT:     irkit_f32x8 acc1_0 = {0};
// CHECK-NEXT:     /* loop i, vector 8: 1 vector of 8 */
// CHECK-NEXT:     {
// CHECK-NEXT:         const int64_t i = 0;
// CHECK-NEXT:         const irkit_f32x8 c0 = {C[2*i], C[2*(i + 1)], C[2*(i + 2)], C[2*(i + 3)], C[2*(i + 4)], C[2*(i + 5)], C[2*(i + 6)], C[2*(i + 7)]};
// CHECK-NEXT:         acc0_0 = c0;
// CHECK-NEXT:         const irkit_f32x8 c1 = {C[2*i + 1], C[2*(i + 1) + 1],
// CHECK:              acc1_0 = c1;
// CHECK:          for (int64_t k = 0; k < K; k += 1) {
// CHECK-NOT:          C[
// CHECK:                  const irkit_f32x8 s0 = irkit_fma_f32x8(a, bv_s, x0);
// CHECK-NEXT:             acc0_0 = s0;
// CHECK-NOT:          C[
// CHECK:              const irkit_f32x8 r0 = acc0_0;
// CHECK-NEXT:         C[2*i] = r0[0];
// CHECK-NEXT:         C[2*(i + 1)] = r0[1];
// CHECK:              C[2*(i + 7)] = r0[7];
// CHECK-NEXT:         const irkit_f32x8 r1 = acc1_0;
// CHECK-NEXT:         C[2*i + 1] = r1[0];
// CHECK:              C[2*(i + 7) + 1] = r1[7];
// CHECK-NEXT:     }
// CHECK-NEXT: }
