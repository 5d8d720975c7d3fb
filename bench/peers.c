/* Native peers and machine probes for `python -m bench`.
 *
 * Built by irkit's own build module (irkit.backends.build.build_shared) with
 * the same flags as irkit's kernels, so the comparison is like-for-like.
 *
 *   bench_triad_inplace  c[i] = a[i]*b[i] + c[i]   (STREAM-style, in place)
 *   bench_triad4         d[i] = a[i]*b[i] + c[i]   (the form irkit's document has)
 *   bench_fma_peak       independent FMA chains on `threads` threads: FP32 FMA peak
 */
#include <stdint.h>
#include <omp.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

void bench_triad_inplace(int64_t n, const float *restrict a, const float *restrict b, float *restrict c)
{
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++)
        c[i] = a[i] * b[i] + c[i];
}

void bench_triad4(int64_t n, const float *restrict a, const float *restrict b, const float *restrict c,
                  float *restrict d)
{
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++)
        d[i] = a[i] * b[i] + c[i];
}

/* 12 independent accumulators hide the FMA latency (4 cycles) on two FMA
 * pipes.  Returns the number of floating-point operations done (an FMA is
 * two); `sink` receives a value that depends on every chain. */
#define CHAINS 12
#if defined(__AVX512F__)
typedef __m512 vec;
#define LANES 16
#define VSET(x) _mm512_set1_ps(x)
#define VFMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define VADD(a, b) _mm512_add_ps(a, b)
#define VFIRST(a) _mm512_cvtss_f32(a)
#elif defined(__AVX2__) && defined(__FMA__)
typedef __m256 vec;
#define LANES 8
#define VSET(x) _mm256_set1_ps(x)
#define VFMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define VADD(a, b) _mm256_add_ps(a, b)
#define VFIRST(a) _mm256_cvtss_f32(a)
#else
typedef float vec;
#define LANES 1
#define VSET(x) (x)
#define VFMA(a, b, c) __builtin_fmaf(a, b, c)
#define VADD(a, b) ((a) + (b))
#define VFIRST(a) (a)
#endif

int bench_simd_lanes(void) { return LANES; }

double bench_fma_peak(int64_t iters, int threads, float *sink)
{
    double flops = 0.0;
#pragma omp parallel num_threads(threads) reduction(+ : flops)
    {
        vec acc[CHAINS];
        const vec m = VSET(0.999999f), add = VSET(1e-7f);
        for (int k = 0; k < CHAINS; k++)
            acc[k] = VSET((float)(omp_get_thread_num() + k));
        for (int64_t i = 0; i < iters; i++) {
#pragma GCC unroll 12
            for (int k = 0; k < CHAINS; k++)
                acc[k] = VFMA(acc[k], m, add);
        }
        vec s = acc[0];
        for (int k = 1; k < CHAINS; k++)
            s = VADD(s, acc[k]);
#pragma omp critical
        *sink += VFIRST(s);
        flops += 2.0 * LANES * CHAINS * (double)iters;
    }
    return flops;
}
