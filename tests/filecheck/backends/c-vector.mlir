// Golden C of vector loops (irkit/backends/c.py, c_math.py): the relaxed_math exp,
// libm's exp without relaxed_math, `aligned` clauses, a float max reduction combined
// by a declared reduction, a store whose element repeats across iterations (no simd
// pragma), and streaming stores for an output the kernel never reads.
// RUN: irkit-opt %s --split-input-file --emit c | filecheck %s

func.func @fexp(%N: index {irkit.name = "N", irkit.default = 8 : i64},
    %x: memref<?xf32> {irkit.name = "x", irkit.role = "input", irkit.shape = affine_map<()[s0] -> (s0)>, irkit.align = 64 : i64},
    %y: memref<?xf32> {irkit.name = "y", irkit.role = "input", irkit.shape = affine_map<()[s0] -> (s0)>},
    %z: memref<?xf32> {irkit.name = "z", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>, irkit.align = 32 : i64}) attributes {irkit.assume = {divisible = {}, aligned = {}, noalias = [], relaxed_math}} {
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "i", stage = "z", vector = 16 : i64} {
    %v = loop.load %x[affine_map<(d0) -> (d0)>] (%i) : memref<?xf32> -> f32
    %w = loop.load %y[affine_map<(d0) -> (d0)>] (%i) : memref<?xf32> -> f32
    %e = math.exp %v : f32
    %s = arith.addf %e, %w : f32
    loop.store %s, %z[affine_map<(d0) -> (d0)>] (%i) : f32, memref<?xf32>
  }
  %zz = loop.load %z[affine_map<() -> (0)>] () : memref<?xf32> -> f32
  loop.store %zz, %z[affine_map<() -> (1)>] () : f32, memref<?xf32>
  func.return
}

// -----

func.func @dexp(%N: index {irkit.name = "N", irkit.default = 8 : i64},
    %x: memref<?xf64> {irkit.name = "x", irkit.role = "input", irkit.shape = affine_map<()[s0] -> (s0)>},
    %y: memref<?xf64> {irkit.name = "y", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>},
    %u: memref<?xf64> {irkit.name = "u", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}) attributes {irkit.assume = {divisible = {}, aligned = {}, noalias = [], relaxed_math}} {
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "i", vector = 8 : i64} {
    %v = loop.load %x[affine_map<(d0) -> (d0)>] (%i) : memref<?xf64> -> f64
    %e = math.exp %v : f64
    %r = math.sqrt %v : f64
    loop.store %e, %y[affine_map<(d0) -> (d0)>] (%i) : f64, memref<?xf64>
    loop.store %r, %u[affine_map<(d0) -> (d0)>] (%i) : f64, memref<?xf64>
  }
  func.return
}

// -----

func.func @libm(%N: index {irkit.name = "N", irkit.default = 8 : i64},
    %x: memref<?xf32> {irkit.name = "x", irkit.role = "input", irkit.shape = affine_map<()[s0] -> (s0)>},
    %y: memref<?xf32> {irkit.name = "y", irkit.role = "output", irkit.shape = affine_map<()[s0] -> (s0)>}) {
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "i", vector = 16 : i64} {
    %v = loop.load %x[affine_map<(d0) -> (d0)>] (%i) : memref<?xf32> -> f32
    %e = math.exp %v : f32
    loop.store %e, %y[affine_map<(d0) -> (d0 floordiv 2)>] (%i) : f32, memref<?xf32>
  }
  func.return
}

// -----

func.func @rowmax(%M: index {irkit.name = "M", irkit.default = 4 : i64}, %N: index {irkit.name = "N", irkit.default = 8 : i64},
    %X: memref<?x?xf32> {irkit.name = "X", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>, irkit.align = 64 : i64},
    %m: memref<?xf32> {irkit.name = "m", irkit.role = "output", irkit.shape = affine_map<()[s0, s1] -> (s0)>}) {
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", parallel} {
    %init = arith.constant 0xFF800000 : f32
    loop.store %init, %m[affine_map<(d0) -> (d0)>] (%i) : f32, memref<?xf32>
    loop.for %j = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", vector = 16 : i64} {
      %x = loop.load %X[affine_map<(d0, d1) -> (d0, d1)>] (%i, %j) : memref<?x?xf32> -> f32
      %acc = loop.load %m[affine_map<(d0) -> (d0)>] (%i) : memref<?xf32> -> f32
      %r = arith.maximumf %acc, %x : f32
      loop.store %r, %m[affine_map<(d0) -> (d0)>] (%i) : f32, memref<?xf32>
    }
  }
  func.return
}

// -----

func.func @stream(%M: index {irkit.name = "M", irkit.default = 4 : i64}, %N: index {irkit.name = "N", irkit.default = 8 : i64},
    %a: memref<?x?xf32> {irkit.name = "a", irkit.role = "input", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>},
    %d: memref<?x?xf32> {irkit.name = "d", irkit.role = "output", irkit.shape = affine_map<()[s0, s1] -> (s0, s1)>}) {
  loop.for %i = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%M) step 1 {loop_name = "i", parallel} {
    loop.for %j = affine_map<() -> (0)>() to affine_map<(d0) -> (d0)>(%N) step 1 {loop_name = "j", vector = 16 : i64} {
      %x = loop.load %a[affine_map<(d0, d1) -> (d0, d1)>] (%i, %j) : memref<?x?xf32> -> f32
      %y = arith.mulf %x, %x : f32
      loop.store %y, %d[affine_map<(d0, d1) -> (d0, d1)>] (%i, %j) : f32, memref<?x?xf32>
    }
  }
  func.return
}

// CHECK:      #include <math.h>
// CHECK:      static inline IRKIT_ALWAYS_INLINE float irkit_fast_expf(float x)
// CHECK-LABEL: void irkit_fexp(int64_t N, const float *restrict x, const float *restrict y, float *restrict z)
// CHECK-NEXT: {
// CHECK-NEXT:     x = (const float *)__builtin_assume_aligned(x, 64);
// CHECK-NEXT:     z = (float *)__builtin_assume_aligned(z, 32);
// CHECK-NEXT:     /* loop i, stage z, vector 16 */
// CHECK-NEXT:     #pragma omp simd simdlen(16) aligned(z: 32) aligned(x: 64)
// CHECK-NEXT:     for (int64_t i = 0; i < N; i += 1) {
// CHECK-NEXT:         const float v = x[i];
// CHECK-NEXT:         const float w = y[i];
// CHECK-NEXT:         const float e = irkit_fast_expf(v);
// CHECK-NEXT:         const float s = e + w;
// CHECK-NEXT:         z[i] = s;
// CHECK-NEXT:     }
// CHECK-NEXT:     const float zz = z[0];
// CHECK-NEXT:     z[1] = zz;
// CHECK-NEXT: }

// CHECK:      // -----
// CHECK-NOT:  irkit_fast_expf
// CHECK:      static inline IRKIT_ALWAYS_INLINE double irkit_fast_exp(double x)
// CHECK-LABEL: void irkit_dexp(int64_t N, const double *restrict x, double *restrict y, double *restrict u)
// CHECK-NEXT: {
// CHECK-NEXT:     /* loop i, vector 8 */
// CHECK-NEXT:     #pragma omp simd simdlen(8)
// CHECK-NEXT:     for (int64_t i = 0; i < N; i += 1) {
// CHECK-NEXT:         const double v = x[i];
// CHECK-NEXT:         const double e = irkit_fast_exp(v);
// CHECK-NEXT:         const double r = sqrt(v);

// CHECK:      // -----
// CHECK-NOT:  irkit_fast_exp
// CHECK-LABEL: void irkit_libm(int64_t N, const float *restrict x, float *restrict y)
// CHECK-NEXT: {
// CHECK-NEXT:     /* loop i, vector 16 */
// CHECK-NEXT:     /* vectorize 16 not asserted: two iterations may write the same element of 'y' */
// CHECK-NEXT:     for (int64_t i = 0; i < N; i += 1) {
// CHECK-NEXT:         const float v = x[i];
// CHECK-NEXT:         const float e = expf(v);
// CHECK-NEXT:         y[irkit_floordiv(i, 2)] = e;

// CHECK:      // -----
// CHECK:      static inline float irkit_maximumf(float a, float b) { return (a > b || a != a) ? a : b; }
// CHECK-NEXT: #pragma omp declare reduction(irkit_maximumf : float : omp_out = irkit_maximumf(omp_out, omp_in)) initializer(omp_priv = (-INFINITY))
// CHECK-LABEL: void irkit_rowmax(int64_t M, int64_t N, const float *restrict X, float *restrict m)
// CHECK:          m[i] = (-INFINITY);
// CHECK-NEXT:     float m_acc = m[i];
// CHECK-NEXT:     /* loop j, vector 16 */
// CHECK-NEXT:     #pragma omp simd reduction(irkit_maximumf:m_acc) simdlen(16) aligned(X: 64)
// CHECK-NEXT:     for (int64_t j = 0; j < N; j += 1) {
// CHECK-NEXT:         const float x = X[i*X_s0 + j];
// CHECK-NEXT:         m_acc = irkit_maximumf(m_acc, x);
// CHECK-NEXT:     }
// CHECK-NEXT:     m[i] = m_acc;

// CHECK:      // -----
// CHECK:      #if defined(__AVX512F__)
// CHECK-NEXT: #define IRKIT_VEC_BYTES 64
// CHECK:      #define IRKIT_NT_THRESHOLD(n) ((int64_t)(IRKIT_NT_MIN_BYTES))
// CHECK:      static inline void irkit_stream_fence(void) { _mm_sfence(); }
// CHECK-LABEL: void irkit_stream(int64_t M, int64_t N, const float *restrict a, float *restrict d)
// CHECK:              /* loop j, vector 16 */
// CHECK-NEXT:         /* streaming stores to 'd' if it has at least 33554432 bytes, the last cache (-DIRKIT_NT_MIN_BYTES=n overrides; irkit/backends/c_math.py) */
// CHECK-NEXT:         {
// CHECK-NEXT:             const int64_t j_lo = 0;
// CHECK-NEXT:             const int64_t j_hi = N;
// CHECK-NEXT:             int64_t j_a = j_hi;
// CHECK-NEXT:             int64_t j_b = j_hi;
// CHECK-NEXT: #if IRKIT_VEC_BYTES
// CHECK-NEXT:             const int64_t j_skip = irkit_stream_skip(&d[i*d_s0 + j_lo], (int64_t)sizeof(float));
// CHECK-NEXT:             if (j_skip >= 0 && (j_hi - j_lo) * (int64_t)sizeof(float) >= IRKIT_NT_MIN_RUN && M * N * (int64_t)sizeof(float) >= IRKIT_NT_THRESHOLD(INT64_C(33554432))) {
// CHECK-NEXT:                 j_a = irkit_min_i64(j_lo + j_skip, j_hi);
// CHECK-NEXT:                 j_b = j_a + (j_hi - j_a) / IRKIT_LANES_F32 * IRKIT_LANES_F32;
// CHECK-NEXT:                 for (int64_t j_c = j_a; j_c < j_b; j_c += IRKIT_LANES_F32) {
// CHECK-NEXT:                     float d_v[IRKIT_LANES_F32] IRKIT_VEC_ALIGNED;
// CHECK-NEXT:                     #pragma omp simd
// CHECK-NEXT:                     for (int64_t j = j_c; j < j_c + IRKIT_LANES_F32; j += 1) {
// CHECK-NEXT:                         const float x = a[i*a_s0 + j];
// CHECK-NEXT:                         const float y = x * x;
// CHECK-NEXT:                         d_v[j - j_c] = y;
// CHECK-NEXT:                     }
// CHECK-NEXT:                     irkit_stream_f32(&d[i*d_s0 + j_c], d_v);
// CHECK-NEXT:                 }
// CHECK-NEXT:             }
// CHECK-NEXT: #endif
// CHECK-NEXT:             #pragma omp simd simdlen(16)
// CHECK-NEXT:             for (int64_t j = j_lo; j < j_a; j += 1) {
// CHECK-NEXT:                 const float x = a[i*a_s0 + j];
// CHECK-NEXT:                 const float y = x * x;
// CHECK-NEXT:                 d[i*d_s0 + j] = y;
// CHECK-NEXT:             }
// CHECK-NEXT:             for (int64_t j = j_b; j < j_hi; j += 1) {
// CHECK-NEXT:                 const float x = a[i*a_s0 + j];
// CHECK-NEXT:                 const float y = x * x;
// CHECK-NEXT:                 d[i*d_s0 + j] = y;
// CHECK-NEXT:             }
// CHECK-NEXT:         }
// CHECK-NEXT: #if IRKIT_VEC_BYTES
// CHECK-NEXT:         irkit_stream_fence();
// CHECK-NEXT: #endif
// CHECK-NEXT:     }
// CHECK-NEXT: }
