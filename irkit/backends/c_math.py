"""Vector helpers for the C backend: the `relaxed_math` exp, and streaming stores.

**exp.**  `math.exp` normally becomes libm's `expf`/`exp`: (nearly)
correctly rounded, but an opaque call, so gcc cannot vectorize a loop that
holds it.  Where the document assumes `relaxed_math` (the key `relaxed_math`
in the kernel's `irkit.assume`), the backend calls `irkit_fast_expf` /
`irkit_fast_exp` instead: `static inline`, always inlined, branch-free, only
arithmetic, comparisons and integer bit operations, so gcc vectorizes the loop
around it (with `#pragma omp simd`, or on its own).  For f32:

    x' = clamp(x, -104, 89)                  NaN passes through the clamps
    k  = round(x' / ln 2)                    by adding 1.5 * 2^23 (round to nearest)
    r  = x' - k ln2_hi - k ln2_lo            Cody-Waite: k ln2_hi is exact, |r| <= ln2/2
    p  = 1 + r + r^2 P(r)                    Cephes' degree-5 P (f64: Taylor to r^13)
    exp(x) = p * 2^k1 * 2^k2,  k1 = round(k / 2), k2 = k - k1

2^k is split in two factors so that both are normal numbers for every k the
clamp allows (-150..128; f64 -1076..1024): results that overflow become +inf,
results in the subnormal range are rounded once (the first product is exact),
and results below half the least subnormal become 0.  The powers of two are
built from the bits of the rounding sums (`bits(k + 1.5*2^23) - bits(1.5*2^23)
= k`), with unsigned integer arithmetic only: no float-to-int conversion
(undefined for NaN, and without an AVX2 instruction for f64) and no right
shift.  NaN gives NaN (p is NaN), +inf gives +inf, -inf gives 0.
Multiply-adds are `fmaf`/`fma` where the target has FMA (`__FMA__`: one
instruction, vectorized), else a multiply and an add.

Accuracy, f32, exhaustive over all 2^32 inputs against double `exp` (gcc 12,
-O3 -march=native): max relative error 8.5e-8 over the normal range (8.2e-8
without FMA), which is less than one ulp (0.99 ulp at most on the test's
sample, where 99.2% of the results are correctly rounded and none is more
than one ulp from the correctly rounded one), max absolute error
0.75 * 2^-149 in the subnormal range, +inf from exactly the same threshold
as correctly rounded results, NaN for every NaN.  f64, 4 million random
samples against long double: max relative error 1.6e-16.
`tests/unit/test_c_vector.py` holds both to 1e-7 / 2.5e-16 on dense
samples, vectorized, scalar and (x86) without FMA.

Why not glibc's libmvec (`_ZGVdN8v_expf`, about as fast here): gcc calls it
only for functions declared `#pragma omp declare simd`, which glibc's
<math.h> does only under `-ffast-math` (that also changes every other
operation's semantics); declaring `expf` so ourselves works with gcc 12 but
ties the kernel to glibc's version and accuracy (its documented bound is 4
ulp).  `-fno-math-errno` alone does not vectorize `expf`.

sqrt needs no fast path: libm's and the instruction's results are both
correctly rounded; what stops gcc vectorizing `sqrtf` is only `errno`, and
the build's default flags include `-fno-math-errno`
(`irkit.backends.build.DEFAULT_CFLAGS`), which changes no value.

**Streaming stores** (`irkit_stream`; used by `KernelEmitter.emit_streaming`
in `irkit.backends.c`).  A store that misses the cache first reads the line
it writes (write-allocate); a non-temporal store writes a whole line around
the caches, so a kernel that streams its output moves less data (a triad:
16 bytes an element instead of 20).  It pays only for an output that would
not stay in cache anyway and is not read soon after: the backend streams an
output the kernel never reads, from a vector loop that writes it
contiguously, when at run time the output has at least as many bytes as
the largest cache of the kernel's inline hardware block, else 32 MiB (the
last cache level of the bundled `generic` profile: the C backend does not
read hardware files); `-DIRKIT_NT_MIN_BYTES=n` overrides it (0: always, as
the tests do).  gcc 12 accepts OpenMP's `nontemporal` clause but ignores
it, and has no portable builtin, so the helpers use the x86 intrinsics for
the target's widest vector (`IRKIT_VEC_BYTES`; 0 elsewhere, and then
nothing is streamed).  A loop entry streams only when it writes at least
`IRKIT_NT_MIN_RUN` (128) contiguous bytes: a streaming store to part of a
line is written to memory piecemeal, far slower than through the cache (8 x
8 transpose tiles ran 3.5x slower streamed).  The streams end with one
`sfence` per iteration of the enclosing parallel loop (else of the
outermost loop), not per loop entry: a fence waits for every pending
streaming store to reach memory.
"""

from __future__ import annotations

# ------------------------------------------------------------------ C text

_BITS32 = """\
/* Bit casts (union type punning is defined in C99 TC3; gcc vectorizes it). */
static inline uint32_t irkit_f32_bits(float f) { union { float f; uint32_t u; } c; c.f = f; return c.u; }
static inline float irkit_f32_from_bits(uint32_t u) { union { uint32_t u; float f; } c; c.u = u; return c.f; }"""

_BITS64 = """\
/* Bit casts (union type punning is defined in C99 TC3; gcc vectorizes it). */
static inline uint64_t irkit_f64_bits(double f) { union { double f; uint64_t u; } c; c.f = f; return c.u; }
static inline double irkit_f64_from_bits(uint64_t u) { union { uint64_t u; double f; } c; c.u = u; return c.f; }"""

_FMA = """\
/* a * b + c in one rounding where the target has FMA (then fmaf is one instruction). */
#ifdef __FMA__
#define IRKIT_FMAF(a, b, c) fmaf((a), (b), (c))
#define IRKIT_FMA(a, b, c) fma((a), (b), (c))
#else
#define IRKIT_FMAF(a, b, c) ((a) * (b) + (c))
#define IRKIT_FMA(a, b, c) ((a) * (b) + (c))
#endif
#if defined(__GNUC__)
#define IRKIT_ALWAYS_INLINE __attribute__((always_inline))
#else
#define IRKIT_ALWAYS_INLINE
#endif"""

_FAST_EXPF = """\
/* relaxed_math exp for f32, vectorizable: error < 1 ulp (8.5e-8 relative), see irkit/backends/c_math.py.
   x > 88.72 gives +inf, x < -103.97 gives 0, NaN gives NaN. */
static inline IRKIT_ALWAYS_INLINE float irkit_fast_expf(float x)
{
    const float shift = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer, kept in the low bits */
    float xc = x > 89.0f ? 89.0f : x;
    xc = xc < -104.0f ? -104.0f : xc;
    const float t = IRKIT_FMAF(xc, 1.44269504088896341f, shift);
    const float k = t - shift;
    float r = IRKIT_FMAF(k, -0.693359375f, xc);
    r = IRKIT_FMAF(k, 2.12194440e-4f, r);
    float p = 1.9875691500e-4f;
    p = IRKIT_FMAF(p, r, 1.3981999507e-3f);
    p = IRKIT_FMAF(p, r, 8.3334519073e-3f);
    p = IRKIT_FMAF(p, r, 4.1665795894e-2f);
    p = IRKIT_FMAF(p, r, 1.6666665459e-1f);
    p = IRKIT_FMAF(p, r, 5.0000001201e-1f);
    p = IRKIT_FMAF(p, r * r, r) + 1.0f;
    const float t1 = IRKIT_FMAF(k, 0.5f, shift); /* k1 = round(k / 2) */
    const float t2 = (k - (t1 - shift)) + shift; /* k2 = k - k1 */
    const uint32_t s = irkit_f32_bits(shift) - 127u;
    const float s1 = irkit_f32_from_bits((irkit_f32_bits(t1) - s) << 23);
    const float s2 = irkit_f32_from_bits((irkit_f32_bits(t2) - s) << 23);
    return p * s1 * s2;
}"""

_FAST_EXP = """\
/* relaxed_math exp for f64, vectorizable: max relative error 1.6e-16, see irkit/backends/c_math.py.
   x > 709.78 gives +inf, x < -745.13 gives 0, NaN gives NaN. */
static inline IRKIT_ALWAYS_INLINE double irkit_fast_exp(double x)
{
    const double shift = 6755399441055744.0; /* 1.5 * 2^52 */
    double xc = x > 710.0 ? 710.0 : x;
    xc = xc < -746.0 ? -746.0 : xc;
    const double t = IRKIT_FMA(xc, 1.4426950408889634, shift);
    const double k = t - shift;
    double r = IRKIT_FMA(k, -0.6931471803691238, xc); /* ln2_hi: 32 significant bits, k * ln2_hi is exact */
    r = IRKIT_FMA(k, -1.9082149292705877e-10, r);
    double p = 1.6059043836821613e-10; /* 1/13!, Horner down to 1/2! */
    p = IRKIT_FMA(p, r, 2.08767569878681e-09);
    p = IRKIT_FMA(p, r, 2.505210838544172e-08);
    p = IRKIT_FMA(p, r, 2.755731922398589e-07);
    p = IRKIT_FMA(p, r, 2.7557319223985893e-06);
    p = IRKIT_FMA(p, r, 2.48015873015873e-05);
    p = IRKIT_FMA(p, r, 0.0001984126984126984);
    p = IRKIT_FMA(p, r, 0.001388888888888889);
    p = IRKIT_FMA(p, r, 0.008333333333333333);
    p = IRKIT_FMA(p, r, 0.041666666666666664);
    p = IRKIT_FMA(p, r, 0.16666666666666666);
    p = IRKIT_FMA(p, r, 0.5);
    p = IRKIT_FMA(p, r * r, r) + 1.0;
    const double t1 = IRKIT_FMA(k, 0.5, shift);
    const double t2 = (k - (t1 - shift)) + shift;
    const uint64_t s = irkit_f64_bits(shift) - 1023u;
    const double s1 = irkit_f64_from_bits((irkit_f64_bits(t1) - s) << 52);
    const double s2 = irkit_f64_from_bits((irkit_f64_bits(t2) - s) << 52);
    return p * s1 * s2;
}"""

# The least run of bytes one loop entry writes for it to use streaming stores (IRKIT_NT_MIN_RUN);
# the cost model reads it from here.
NT_MIN_RUN_BYTES = 128

_STREAM = (
    """\
/* Streaming (non-temporal) stores of whole vectors, for large outputs that the kernel writes
   once and never reads (see irkit/backends/c_math.py).  IRKIT_NT_THRESHOLD(n): the least size
   of an output that is streamed, n (the hardware's last cache) unless -DIRKIT_NT_MIN_BYTES=... */
#if defined(__AVX512F__)
#define IRKIT_VEC_BYTES 64
#elif defined(__AVX__)
#define IRKIT_VEC_BYTES 32
#elif defined(__SSE2__)
#define IRKIT_VEC_BYTES 16
#else
#define IRKIT_VEC_BYTES 0 /* no streaming stores: the plain loops do everything */
#endif
#ifdef IRKIT_NT_MIN_BYTES
#define IRKIT_NT_THRESHOLD(n) ((int64_t)(IRKIT_NT_MIN_BYTES))
#else
#define IRKIT_NT_THRESHOLD(n) (n)
#endif
/* The least run of bytes one entry of a loop writes for it to stream: two lines, so that at
   least one whole line goes out (a partial line of streaming stores is written piecemeal). */
#define IRKIT_NT_MIN_RUN """
    + str(NT_MIN_RUN_BYTES)
    + """
#if IRKIT_VEC_BYTES
#include <immintrin.h>
#define IRKIT_LANES_F32 (IRKIT_VEC_BYTES / 4)
#define IRKIT_LANES_F64 (IRKIT_VEC_BYTES / 8)
#define IRKIT_VEC_ALIGNED __attribute__((aligned(IRKIT_VEC_BYTES)))
/* Elements from p to the next vector boundary; -1 if p is not aligned to its element size. */
static inline int64_t irkit_stream_skip(const void *p, int64_t size)
{
    const uintptr_t a = (uintptr_t)p;
    if (a % (uintptr_t)size != 0) return -1;
    return (int64_t)(((uintptr_t)IRKIT_VEC_BYTES - a % IRKIT_VEC_BYTES) % IRKIT_VEC_BYTES) / size;
}
static inline void irkit_stream_f32(float *p, const float *v)
{
#if IRKIT_VEC_BYTES == 64
    _mm512_stream_ps(p, _mm512_load_ps(v));
#elif IRKIT_VEC_BYTES == 32
    _mm256_stream_ps(p, _mm256_load_ps(v));
#else
    _mm_stream_ps(p, _mm_load_ps(v));
#endif
}
static inline void irkit_stream_f64(double *p, const double *v)
{
#if IRKIT_VEC_BYTES == 64
    _mm512_stream_pd(p, _mm512_load_pd(v));
#elif IRKIT_VEC_BYTES == 32
    _mm256_stream_pd(p, _mm256_load_pd(v));
#else
    _mm_stream_pd(p, _mm_load_pd(v));
#endif
}
/* Streaming stores are weakly ordered: fence them before anyone else may read the data. */
static inline void irkit_stream_fence(void) { _mm_sfence(); }
#endif"""
)

# The size from which outputs are streamed when the kernel's hardware gives no cache sizes:
# the last cache level of the bundled `generic` profile (irkit/hw/generic.hw).
DEFAULT_NT_MIN_BYTES = 32 * 1024 * 1024

# name -> (C text, helpers it needs); in the order they are written out.
HELPERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "irkit_bits32": (_BITS32, ()),
    "irkit_bits64": (_BITS64, ()),
    "irkit_fma": (_FMA, ()),
    "irkit_fast_expf": (_FAST_EXPF, ("irkit_bits32", "irkit_fma")),
    "irkit_fast_exp": (_FAST_EXP, ("irkit_bits64", "irkit_fma")),
    "irkit_stream": (_STREAM, ()),
}

# (math op, C element type) -> the relaxed_math function that replaces libm's.
_RELAXED: dict[tuple[str, str], str] = {
    ("math.exp", "float"): "irkit_fast_expf",
    ("math.exp", "double"): "irkit_fast_exp",
}


def relaxed_function(op_name: str, ctype: str) -> str | None:
    """The fast function for `op_name` on `ctype` under relaxed_math, None to keep libm's."""
    return _RELAXED.get((op_name, ctype))


def closure(used: set[str]) -> list[str]:
    """The helpers of this module that `used` names, with what they need, in writing order."""
    want: set[str] = set()
    todo = [h for h in used if h in HELPERS]
    while todo:
        name = todo.pop()
        if name not in want:
            want.add(name)
            todo.extend(HELPERS[name][1])
    return [name for name in HELPERS if name in want]


def helper_texts(used: set[str]) -> list[str]:
    """C text of the helpers `closure(used)`."""
    return [HELPERS[name][0] for name in closure(used)]
