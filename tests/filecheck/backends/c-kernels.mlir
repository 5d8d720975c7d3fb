// Golden C: a vectorized sum reduction kept in a local with an OpenMP reduction
// clause; i32 arithmetic that wraps; a 3-D tensor in storage order [2, 0, 1]; an
// unused size; an f64 vector loop whose iterations depend on each other (no simd).
// RUN: irkit-opt %s --split-input-file --emit c | filecheck %s

func.func @rowsum(%M: index {irkit.name = "M", irkit.default = 8 : i64}, %N: index {irkit.name = "N", irkit.default = 8 : i64},
    %X: memref<?x?xf32> {irkit.name = "X", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>, irkit.align = 64 : i64},
    %s: memref<?xf32> {irkit.name = "s", irkit.role = "output", irkit.shape = affine_map<()[s0, s1] -> (s0)>}) {
  loop.for %io = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 32 {loop_name = "io", stage = "s", parallel, origin = "r.design:3:4"} {
    loop.for %ii = affine_map<() -> (0)>() to affine_map<(d0, d1) -> (32, d1 - d0)>(%io, %M) step 1 {loop_name = "ii", stage = "s"} {
      %z = arith.constant 0.000000e+00 : f32
      loop.store %z, %s[affine_map<(d0, d1) -> (d0 + d1)>] (%io, %ii) : f32, memref<?xf32>
      loop.for %j = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", stage = "s", vector = 16 : i64} {
        %x = loop.load %X[affine_map<(d0, d1, d2) -> (d0 + d1, d2)>] (%io, %ii, %j) : memref<?x?xf32> -> f32
        %acc = loop.load %s[affine_map<(d0, d1) -> (d0 + d1)>] (%io, %ii) : memref<?xf32> -> f32
        %sum = arith.addf %acc, %x : f32
        loop.store %sum, %s[affine_map<(d0, d1) -> (d0 + d1)>] (%io, %ii) : f32, memref<?xf32>
      }
    }
  }
  func.return
}

// -----

func.func @ints(%N: index {irkit.name = "N", irkit.default = 5 : i64}, %K: index {irkit.name = "K", irkit.default = 3 : i64}, %Unused: index {irkit.name = "Unused", irkit.default = 1 : i64},
    %p: memref<?x?x?xi32, affine_map<(d0, d1, d2) -> (d2, d0, d1)>> {irkit.name = "p", irkit.role = "input", irkit.shape = affine_map<()[s0, s1, s2] -> (s0, s1, 2)>},
    %q: memref<?x?x?xi32> {irkit.name = "q", irkit.role = "output", irkit.shape = affine_map<()[s0, s1, s2] -> (s0, s1, 2)>}) {
  %big = arith.constant 2147483647 : i32
  %seven = arith.constant -7 : i32
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "i", parallel} {
    loop.for %j = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%K) step 1 {loop_name = "j", unroll = 2 : i64} {
      loop.for %l = affine_map<() -> (0)>() to affine_map<() -> (2)>() step 1 {loop_name = "l"} {
        %v = loop.load %p[affine_map<(d0, d1, d2) -> (d0, d1, d2)>] (%i, %j, %l) : memref<?x?x?xi32, affine_map<(d0, d1, d2) -> (d2, d0, d1)>> -> i32
        %w = arith.addi %v, %big : i32
        %m = arith.muli %w, %seven : i32
        %mx = arith.maxsi %m, %v : i32
        %d = arith.divsi %mx, %seven : i32
        %s = arith.subi %d, %v : i32
        loop.store %s, %q[affine_map<(d0, d1, d2) -> (d0, d1, d2)>] (%i, %j, %l) : i32, memref<?x?x?xi32>
      }
    }
  }
  func.return
}

// -----

func.func @dbl(%N: index {irkit.name = "N", irkit.default = 9 : i64},
    %x: memref<?xf64> {irkit.name = "x", irkit.role = "input", irkit.shape = affine_map<()[s0] -> (s0)>},
    %y: memref<?xf64> {irkit.name = "y", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0 + 1)>}) {
  %half = arith.constant 5.000000e-01 : f64
  %zero = arith.constant 0.000000e+00 : f64
  loop.store %zero, %y[affine_map<(d0) -> (0)>] (%N) : f64, memref<?xf64>
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "i", vector = 4 : i64, unroll = 2 : i64} {
    %prev = loop.load %y[affine_map<(d0) -> (d0)>] (%i) : memref<?xf64> -> f64
    %v = loop.load %x[affine_map<(d0) -> (d0)>] (%i) : memref<?xf64> -> f64
    %e = math.exp %v : f64
    %s = math.sqrt %e : f64
    %t = arith.mulf %s, %half : f64
    %u = arith.addf %prev, %t : f64
    loop.store %u, %y[affine_map<(d0) -> (d0 + 1)>] (%i) : f64, memref<?xf64>
  }
  func.return
}

// CHECK: static inline int64_t irkit_min_i64(int64_t a, int64_t b) { return a < b ? a : b; }
// CHECK-LABEL: void irkit_rowsum(int64_t M, int64_t N, const float *restrict X, float *restrict s)
// CHECK-NEXT: {
// CHECK-NEXT:     const int64_t X_s0 = N;
// CHECK-NEXT:     X = (const float *)__builtin_assume_aligned(X, 64);
// CHECK-NEXT:     /* loop io, stage s (r.design:3:4) */
// CHECK-NEXT:     #pragma omp parallel for schedule(static)
// CHECK-NEXT:     for (int64_t io = 0; io < M; io += 32) {
// CHECK-NEXT:         for (int64_t ii = 0; ii < irkit_min_i64(32, M - io); ii += 1) {
// CHECK-NEXT:             s[io + ii] = 0.0f;
// CHECK-NEXT:             float s_acc = s[io + ii];
// CHECK-NEXT:             /* loop j, stage s, vector 16 */
// CHECK-NEXT:             #pragma omp simd reduction(+:s_acc) simdlen(16) aligned(X: 64)
// CHECK-NEXT:             for (int64_t j = 0; j < N; j += 1) {
// CHECK-NEXT:                 const float x = X[(io + ii)*X_s0 + j];
// CHECK-NEXT:                 s_acc = s_acc + x;
// CHECK-NEXT:             }
// CHECK-NEXT:             s[io + ii] = s_acc;
// CHECK-NEXT:         }
// CHECK-NEXT:     }
// CHECK-NEXT: }
// CHECK: // -----
// CHECK: static inline int32_t irkit_max_i32(int32_t a, int32_t b) { return a > b ? a : b; }
// CHECK: static inline int32_t irkit_add_i32(int32_t a, int32_t b) { return (int32_t)((uint32_t)a + (uint32_t)b); }
// CHECK: static inline int32_t irkit_sub_i32(int32_t a, int32_t b) { return (int32_t)((uint32_t)a - (uint32_t)b); }
// CHECK: static inline int32_t irkit_mul_i32(int32_t a, int32_t b) { return (int32_t)((uint32_t)a * (uint32_t)b); }
// CHECK-LABEL: void irkit_ints(int64_t N, int64_t K, int64_t Unused, const int32_t *restrict p, int32_t *restrict q)
// CHECK-NEXT: {
// CHECK-NEXT:     const int64_t p_s0 = K;
// CHECK-NEXT:     const int64_t p_s2 = N * K;
// CHECK-NEXT:     const int64_t q_s0 = K * 2;
// CHECK-NEXT:     (void)Unused;
// CHECK-NEXT:     #pragma omp parallel for schedule(static)
// CHECK-NEXT:     for (int64_t i = 0; i < N; i += 1) {
// CHECK-NEXT:         #pragma GCC unroll 2
// CHECK-NEXT:         for (int64_t j = 0; j < K; j += 1) {
// CHECK-NEXT:             for (int64_t l = 0; l < 2; l += 1) {
// CHECK-NEXT:                 const int32_t v = p[l*p_s2 + i*p_s0 + j];
// CHECK-NEXT:                 const int32_t w = irkit_add_i32(v, 2147483647);
// CHECK-NEXT:                 const int32_t m = irkit_mul_i32(w, (-7));
// CHECK-NEXT:                 const int32_t mx = irkit_max_i32(m, v);
// CHECK-NEXT:                 const int32_t d = mx / (-7);
// CHECK-NEXT:                 const int32_t s = irkit_sub_i32(d, v);
// CHECK-NEXT:                 q[i*q_s0 + 2*j + l] = s;
// CHECK-NEXT:             }
// CHECK-NEXT:         }
// CHECK-NEXT:     }
// CHECK-NEXT: }
// CHECK: // -----
// CHECK-LABEL: void irkit_dbl(int64_t N, const double *restrict x, double *restrict y)
// CHECK-NEXT: {
// CHECK-NEXT:     y[0] = 0.0;
// CHECK-NEXT:     /* loop i, vector 4 */
// CHECK-NEXT:     /* vectorize 4 not asserted: 'y' is accessed at two different elements in one iteration */
// CHECK-NEXT:     #pragma GCC unroll 2
// CHECK-NEXT:     for (int64_t i = 0; i < N; i += 1) {
// CHECK-NEXT:         const double prev = y[i];
// CHECK-NEXT:         const double v = x[i];
// CHECK-NEXT:         const double e = exp(v);
// CHECK-NEXT:         const double s = sqrt(e);
// CHECK-NEXT:         const double t = s * 0.5;
// CHECK-NEXT:         const double u = prev + t;
// CHECK-NEXT:         y[i + 1] = u;
// CHECK-NEXT:     }
// CHECK-NEXT: }
