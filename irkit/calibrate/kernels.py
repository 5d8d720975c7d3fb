"""The C microbenchmarks of `irkit calibrate`, built by irkit's own backend.

They are compiled by `irkit.backends.build.build_shared` -- the compiler,
default flags (`-O3 -march=native -fopenmp ...`, or `$IRKIT_CFLAGS`) and
cache that irkit's kernels get -- and called through ctypes, so a figure
measured here is what a generated kernel can reach, not what a hand-tuned
assembler loop could.

Every benchmark loops internally `reps` times (the driver picks `reps` so a
trial takes tens of milliseconds), runs `trials` timed trials in one call
(arrays are allocated and first touched once, outside the timing) and
writes each trial's seconds to `times[]`; a result derived from the data
goes to `sink` so the compiler cannot drop the work.  Timing is
`clock_gettime(CLOCK_MONOTONIC)` around the trial; in the parallel
variants every thread stamps its own start and end between barriers and a
trial lasts from the first start to the last end (`cal_span`).

- `irkit_cal_fma_f32/f64`: 12 independent vector accumulators
  `a = a * b + c` (GCC vector extensions of the target's widest vector;
  contracted to one FMA instruction where the target has FMA, else a
  multiply and an add -- 2 flops a lane either way).  12 chains cover the
  FMA latency (4-5 cycles) times the FMA pipes (2) of current x86 cores.
  With `threads` > 1 every thread runs the same loop (OpenMP).
- `irkit_cal_libm_exp_f32`: the C library's `expf`, which code without
  `relaxed_math` calls one element at a time.
- `irkit_cal_div_f32`, `_sqrt_f32`, `_exp_f32`: an L1-resident array of
  1024 f32 updated in place, `x = c / x`, `x = sqrtf(x) * c`,
  `x = irkit_fast_expf(-x)` (the `relaxed_math` exp of
  `irkit.backends.c_math`, the same C text), in a vector loop: every
  element is an independent chain, so the loop runs at the unit's
  throughput.  An empty `asm` with a memory clobber between passes keeps
  gcc from interchanging the loops (which would make each element a
  latency-bound chain).
- `irkit_cal_triad`: STREAM's triad `a[i] = b[i] * s + c[i]` on f32 arrays
  of `n` elements per thread, each thread on its own arrays (allocated and
  first touched by that thread, offset from each other so that loads and
  stores do not alias in the 4 KiB page offset).
- `irkit_cal_adds`: a chain of dependent integer adds (one a cycle on
  every current core), for the clock frequency.
- `irkit_cal_fma_latency`: one chain of dependent f32 FMAs (`a = a * b +
  c`), for `fp_latency`: the step of an accumulation chain, in cycles.
- `irkit_cal_store_forward`: an 8-float vector accumulated in memory
  across an outer loop (`o[x] += a[k][x]`, x inside), for `store_forward`:
  each entry of the inner loop waits for the store of the entry before.
- `irkit_cal_parallel`: `reps` empty `#pragma omp parallel for
  schedule(static)` loops, one iteration per thread.
- `irkit_cal_empty`: nothing, for the cost of a bare ctypes call.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

from irkit.backends import c_math

CHAINS = 12  # independent FMA accumulators
ARRAY = 1024  # elements of the div / sqrt / exp array (4 KiB)
ADDS = 64  # dependent adds per iteration of the frequency loop
LATENCY_STEPS = 16  # dependent adds per iteration of the latency loop


def _fma_function(ctype: str) -> str:
    suffix = "f32" if ctype == "float" else "f64"
    vec = f"cal_v{suffix}"
    lit = "f" if ctype == "float" else ""
    init = "\n".join(f"    {vec} a{k} = z + {1 + k / 1000:.3f}{lit};" for k in range(CHAINS))
    body = "\n".join(f"        a{k} = a{k} * b + c;" for k in range(CHAINS))
    total = " + ".join(f"a{k}" for k in range(CHAINS))
    return f"""\
static double cal_fma_{suffix}_run(int64_t reps, {ctype} bs, {ctype} cs)
{{
    const {vec} z = {{0}};
    const {vec} b = z + bs, c = z + cs;
{init}
    for (int64_t r = 0; r < reps; r++) {{
{body}
    }}
    const {vec} s = {total};
    double out = 0;
    for (int i = 0; i < (int)(sizeof({vec}) / sizeof({ctype})); i++) out += (double)s[i];
    return out;
}}

int32_t irkit_cal_fma_{suffix}(int64_t reps, int32_t threads, int32_t trials, double *times, double *sink)
{{
    double total = 0;
    double *stamps = malloc((size_t)threads * 2 * sizeof(double));
    if (!stamps) return -1;
#pragma omp parallel num_threads(threads) reduction(+ : total)
    {{
        const {ctype} one = ({ctype})cal_const / ({ctype})1.5; /* 1, unknown to the compiler: no chain is folded */
        const int me = cal_thread();
        for (int32_t t = 0; t < trials; t++) {{
#pragma omp barrier
            stamps[2 * me] = cal_now();
            total += cal_fma_{suffix}_run(reps, 0.9999{lit} * one, 1e-4{lit} * one);
            stamps[2 * me + 1] = cal_now();
#pragma omp barrier
            if (me == 0) times[t] = cal_span(stamps, cal_team());
        }}
    }}
    free(stamps);
    *sink = total;
    return 0;
}}
"""


def _array_function(name: str, init: str, update: str) -> str:
    return f"""\
void irkit_cal_{name}(int64_t reps, int32_t trials, double *times, double *sink)
{{
    float x[CAL_ARRAY] __attribute__((aligned(64)));
    const float c = cal_const;
    for (int i = 0; i < CAL_ARRAY; i++) x[i] = {init};
    for (int32_t t = 0; t < trials; t++) {{
        const double t0 = cal_now();
        for (int64_t r = 0; r < reps; r++) {{
#pragma omp simd aligned(x : 64)
            for (int i = 0; i < CAL_ARRAY; i++) x[i] = {update};
            CAL_CLOBBER(x);
        }}
        times[t] = cal_now() - t0;
    }}
    double s = 0;
    for (int i = 0; i < CAL_ARRAY; i++) s += x[i];
    *sink = s + (double)c;
}}
"""


_PRELUDE = f"""\
/* irkit calibrate microbenchmarks: generated by irkit/calibrate/kernels.py (see its docstring). */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <math.h>
#ifdef _OPENMP
#include <omp.h>
static int cal_thread(void) {{ return omp_get_thread_num(); }}
static int cal_team(void) {{ return omp_get_num_threads(); }}
#else
static int cal_thread(void) {{ return 0; }}
static int cal_team(void) {{ return 1; }}
#endif

#if defined(__AVX512F__)
#define CAL_VEC_BYTES 64
#elif defined(__AVX__)
#define CAL_VEC_BYTES 32
#else
#define CAL_VEC_BYTES 16
#endif
typedef float cal_vf32 __attribute__((vector_size(CAL_VEC_BYTES)));
typedef double cal_vf64 __attribute__((vector_size(CAL_VEC_BYTES)));

#define CAL_ARRAY {ARRAY}
/* A compiler barrier: the memory behind p is read and written here, as far as gcc knows. */
#define CAL_CLOBBER(p) __asm__ volatile("" : : "r"(p) : "memory")

/* A constant the compiler cannot see through (volatile), so no pass is folded away. */
static volatile float cal_const_v = 1.5f;
#define cal_const (cal_const_v)

static double cal_now(void)
{{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}}

/* A parallel trial lasts from the first thread's start to the last thread's end (stamps: start, end per
   thread).  Not thread 0's view between barriers: with more threads than CPUs, thread 0 may be
   descheduled after a barrier while the others already work. */
static double cal_span(const double *stamps, int team)
{{
    double first = stamps[0], last = stamps[1];
    for (int i = 1; i < team; i++) {{
        if (stamps[2 * i] < first) first = stamps[2 * i];
        if (stamps[2 * i + 1] > last) last = stamps[2 * i + 1];
    }}
    return last - first;
}}

int32_t irkit_cal_vector_bytes(void) {{ return CAL_VEC_BYTES; }}
int32_t irkit_cal_openmp(void)
{{
#ifdef _OPENMP
    return _OPENMP;
#else
    return 0;
#endif
}}
void irkit_cal_empty(int64_t n, void *a, void *b) {{ (void)n; (void)a; (void)b; }}
"""

_LATENCY = (
    """\
/* One dependent chain of adds: each waits for the one before, so a step takes the add's latency
   (a reduction's chain: `s = s + x` in a loop that is not vectorised). */
void irkit_cal_fma_latency(int64_t reps, int32_t trials, double *times, double *sink)
{
    const float one = (float)cal_const / 1.5f;
    const float c = 1e-4f * one;
    float a = one;
    for (int32_t t = 0; t < trials; t++) {
        const double t0 = cal_now();
        for (int64_t r = 0; r < reps; r++) {
"""
    + "\n".join("            a = a + c;" for _ in range(LATENCY_STEPS))
    + """
        }
        times[t] = cal_now() - t0;
    }
    *sink = a;
}
"""
)

_TRIAD = """\
static void cal_triad_pass(float *restrict a, const float *restrict b, const float *restrict c, float s, int64_t n)
{
#pragma omp simd aligned(a, b, c : 64)
    for (int64_t i = 0; i < n; i++) a[i] = b[i] * s + c[i];
}

/* Returns 0, or -1 when a thread could not allocate its arrays (then nothing is timed). */
int32_t irkit_cal_triad(int64_t n, int64_t reps, int32_t threads, int32_t trials, double *times, double *sink)
{
    int32_t failed = 0;
    double total = 0;
    double *stamps = malloc((size_t)threads * 2 * sizeof(double));
    if (!stamps) return -1;
#pragma omp parallel num_threads(threads) reduction(+ : failed, total)
    {
        const int me = cal_thread();
        /* a, b, c 1 KiB, 2 KiB, 3 KiB past multiples of 4 KiB: no 4K aliasing between them. */
        const int64_t stride = (n + 1023) / 1024 * 1024; /* a multiple of 4 KiB */
        float *buf = NULL;
        if (posix_memalign((void **)&buf, 4096, (size_t)(3 * stride + 1024) * sizeof(float)) != 0) buf = NULL;
        int64_t m = buf ? n : 0;
        failed += buf == NULL;
        float *a = buf ? buf + 256 : NULL, *b = buf ? buf + stride + 512 : NULL, *c = buf ? buf + 2 * stride + 768 : NULL;
        for (int64_t i = 0; i < m; i++) { a[i] = 0.0f; b[i] = 1.0f; c[i] = 2.0f; }
        const float s = cal_const;
        if (m) cal_triad_pass(a, b, c, s, m); /* warm the level up */
        for (int32_t t = 0; t < trials; t++) {
#pragma omp barrier
            stamps[2 * me] = cal_now();
            for (int64_t r = 0; r < reps && m; r++) {
                cal_triad_pass(a, b, c, s, m);
                CAL_CLOBBER(a);
            }
            stamps[2 * me + 1] = cal_now();
#pragma omp barrier
            if (me == 0) times[t] = cal_span(stamps, cal_team());
        }
        if (m) total += a[m / 2];
        free(buf);
    }
    free(stamps);
    *sink = total;
    return failed ? -1 : 0;
}
"""

_ADDS = (
    """\
void irkit_cal_adds(int64_t reps, int32_t trials, double *times, double *sink)
{
    uint64_t x = 0;
    for (int32_t t = 0; t < trials; t++) {
        const double t0 = cal_now();
        for (int64_t r = 0; r < reps; r++) {
"""
    + "\n".join('            x += 1; __asm__ volatile("" : "+r"(x));' for _ in range(ADDS))
    + """
        }
        times[t] = cal_now() - t0;
    }
    *sink = (double)x;
}
"""
)

STRIDED_ROWS = 512  # rows of the strided read: 512 x 8 lines = 256 KiB, more than L1, within L2
STRIDED_COLUMNS = 8  # columns read together (a line apart): misses in flight, like a gather

_STRIDED = f"""\
/* A column read element by element, as a transpose or a gather reads: rows {STRIDED_ROWS}, 4160 B
   apart (not a power of two, so they spread over the sets), {STRIDED_COLUMNS} columns a line apart read
   together.  The {STRIDED_ROWS} x {STRIDED_COLUMNS} lines miss L1 and come from L2. */
void irkit_cal_strided(int64_t reps, int32_t trials, double *times, double *sink)
{{
    enum {{ ROWS = {STRIDED_ROWS}, STRIDE = 1040 }};
    static float a[ROWS * STRIDE] __attribute__((aligned(64)));
    for (int64_t i = 0; i < ROWS * STRIDE; i++) a[i] = (float)(i % 7) * 1e-3f;
    float s[{STRIDED_COLUMNS}] = {{0}};
    for (int32_t t = 0; t < trials; t++) {{
        const double t0 = cal_now();
        for (int64_t r = 0; r < reps; r++) {{
            for (int64_t i = 0; i < ROWS; i++) {{
                const float *row = a + i * STRIDE;
                for (int c = 0; c < {STRIDED_COLUMNS}; c++) s[c] += row[c * 16];
            }}
            CAL_CLOBBER(s);
        }}
        times[t] = cal_now() - t0;
    }}
    double total = 0;
    for (int c = 0; c < {STRIDED_COLUMNS}; c++) total += s[c];
    *sink = total;
}}
"""

CONFLICT_ROWS = 64  # rows of the conflicting column walk: 64 lines in one L1 set of 8 ways
CONFLICT_COLUMNS = 1024  # floats a row: rows exactly 4 KiB apart

_CONFLICT = f"""\
/* A column walk whose rows are 4 KiB apart, as a transpose of a power-of-two matrix reads: the
   {CONFLICT_ROWS} lines of a column all fall in one L1 set, so every access misses, and misses to
   one set are served one after another.  Columns in order, rows inner. */
void irkit_cal_conflict(int64_t reps, int32_t trials, double *times, double *sink)
{{
    enum {{ ROWS = {CONFLICT_ROWS}, COLUMNS = {CONFLICT_COLUMNS} }};
    static float a[ROWS * COLUMNS] __attribute__((aligned(4096)));
    for (int64_t i = 0; i < ROWS * COLUMNS; i++) a[i] = (float)(i % 7) * 1e-3f;
    float s = 0;
    for (int32_t t = 0; t < trials; t++) {{
        const double t0 = cal_now();
        for (int64_t r = 0; r < reps; r++) {{
            for (int64_t c = 0; c < COLUMNS; c++)
                for (int64_t i = 0; i < ROWS; i++) s += a[i * COLUMNS + c];
            CAL_CLOBBER(s);
        }}
        times[t] = cal_now() - t0;
    }}
    *sink = s;
}}
"""

FORWARD_STEPS = 256  # entries of the inner loop a repetition: each reloads what the one before stored

_FORWARD = f"""\
/* An accumulator kept in memory across an outer loop, as `o[x] += a[k][x]` with k outside and x
   inside and vectorised keeps it: each entry of the inner loop reloads the vector the entry before
   stored, so an entry waits for store-to-load forwarding plus one add.  The extent (one vector of
   f32) comes at run time, as a kernel's does, so the loop has its usual prologue and tails. */
__attribute__((noinline)) static void cal_forward_pass(float *restrict o, const float *restrict a, int64_t n)
{{
    for (int64_t k = 0; k < {FORWARD_STEPS}; k++) {{
#pragma omp simd
        for (int64_t x = 0; x < n; x++) o[x] = o[x] + a[(k & 15) * n + x];
        CAL_CLOBBER(o);
    }}
}}

void irkit_cal_store_forward(int64_t reps, int32_t trials, double *times, double *sink)
{{
    const int64_t n = (int64_t)(cal_const * 16.0f / 3.0f); /* 8, unknown to the compiler */
    static float a[16 * 64] __attribute__((aligned(64)));
    static float o[64] __attribute__((aligned(64)));
    for (int64_t i = 0; i < 16 * 64; i++) a[i] = (float)(i % 7) * 1e-3f;
    for (int32_t t = 0; t < trials; t++) {{
        const double t0 = cal_now();
        for (int64_t r = 0; r < reps; r++) cal_forward_pass(o, a, n);
        times[t] = cal_now() - t0;
    }}
    *sink = o[0];
}}
"""

_PAGE_FAULT = """\
/* A large temporary, as a kernel allocates one: fresh pages from the system, first written
   (the page faults), then written again (the same bytes, no faults).  times[] gets the difference. */
int32_t irkit_cal_page_fault(int64_t bytes, int32_t trials, double *times, double *sink)
{
    double total = 0;
    for (int32_t t = 0; t < trials; t++) {
        const double t0 = cal_now();
        char *p = malloc((size_t)bytes);
        if (!p) return -1;
        memset(p, t + 1, (size_t)bytes);
        const double t1 = cal_now();
        memset(p, t + 2, (size_t)bytes);
        const double t2 = cal_now();
        total += p[bytes / 2];
        free(p);
        times[t] = (t1 - t0) - (t2 - t1);
    }
    *sink = total;
    return 0;
}
"""

_PARALLEL = """\
int32_t irkit_cal_parallel(int64_t reps, int32_t threads, int32_t trials, double *times, double *sink)
{
    float *buf = calloc((size_t)threads * 16, sizeof(float)); /* one cache line per thread */
    if (!buf) return -1;
    for (int32_t t = 0; t < trials; t++) {
        const double t0 = cal_now();
        for (int64_t r = 0; r < reps; r++) {
#pragma omp parallel for schedule(static) num_threads(threads)
            for (int64_t i = 0; i < threads; i++) buf[i * 16] += 1.0f;
        }
        times[t] = cal_now() - t0;
    }
    *sink = buf[0];
    free(buf);
    return 0;
}
"""


def source() -> str:
    """The C text of every microbenchmark (one library)."""
    parts = [
        _PRELUDE,
        *c_math.helper_texts({"irkit_fast_expf"}),
        "",
        "/* FMA chains: a * b + c contracts to one FMA where the target has it (2 flops a lane either way). */",
        "#pragma GCC push_options",
        '#pragma GCC optimize ("fp-contract=fast")',
        _fma_function("float"),
        _fma_function("double"),
        _LATENCY,
        "#pragma GCC pop_options",
        "",
        _array_function("div_f32", "1.0f + (float)i * 1e-4f", "c / x[i]"),
        _array_function("sqrt_f32", "1.0f + (float)i * 1e-4f", "sqrtf(x[i]) * c"),
        _array_function("exp_f32", "(float)i * 1e-4f", "irkit_fast_expf(-x[i])"),
        _array_function("libm_exp_f32", "(float)i * 1e-4f", "expf(-x[i])"),  # scalar calls, as strict code makes
        _TRIAD,
        _ADDS,
        _PAGE_FAULT,
        _STRIDED,
        _CONFLICT,
        _FORWARD,
        _PARALLEL,
    ]
    return "\n".join(parts)


_I64, _I32, _PD = ctypes.c_int64, ctypes.c_int32, ctypes.POINTER(ctypes.c_double)

SIGNATURES: dict[str, tuple[object, list[object]]] = {
    "irkit_cal_vector_bytes": (_I32, []),
    "irkit_cal_openmp": (_I32, []),
    "irkit_cal_empty": (None, [_I64, ctypes.c_void_p, ctypes.c_void_p]),
    "irkit_cal_fma_f32": (_I32, [_I64, _I32, _I32, _PD, _PD]),
    "irkit_cal_fma_f64": (_I32, [_I64, _I32, _I32, _PD, _PD]),
    "irkit_cal_div_f32": (None, [_I64, _I32, _PD, _PD]),
    "irkit_cal_sqrt_f32": (None, [_I64, _I32, _PD, _PD]),
    "irkit_cal_exp_f32": (None, [_I64, _I32, _PD, _PD]),
    "irkit_cal_libm_exp_f32": (None, [_I64, _I32, _PD, _PD]),
    "irkit_cal_triad": (_I32, [_I64, _I64, _I32, _I32, _PD, _PD]),
    "irkit_cal_adds": (None, [_I64, _I32, _PD, _PD]),
    "irkit_cal_fma_latency": (None, [_I64, _I32, _PD, _PD]),
    "irkit_cal_parallel": (_I32, [_I64, _I32, _I32, _PD, _PD]),
    "irkit_cal_page_fault": (_I32, [_I64, _I32, _PD, _PD]),
    "irkit_cal_strided": (None, [_I64, _I32, _PD, _PD]),
    "irkit_cal_conflict": (None, [_I64, _I32, _PD, _PD]),
    "irkit_cal_store_forward": (None, [_I64, _I32, _PD, _PD]),
}


@dataclass
class Library:
    """The loaded microbenchmarks: `lib.irkit_cal_*` with their ctypes signatures."""

    lib: ctypes.CDLL
    path: str

    @property
    def vector_bytes(self) -> int:
        return int(self.lib.irkit_cal_vector_bytes())

    @property
    def openmp(self) -> int:
        """`_OPENMP` of the build (0: built without OpenMP, so no all-core figures)."""
        return int(self.lib.irkit_cal_openmp())


def build() -> Library:
    """Compile (or fetch from irkit's build cache) and load the microbenchmarks.

    Raises `DiagnosticError`, as `irkit.backends.build` does, when there is no
    compiler or it fails.
    """
    from irkit.backends.build import build_shared, load_library

    path = build_shared(source())
    lib = load_library(path)
    for name, (restype, argtypes) in SIGNATURES.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    return Library(lib, str(path))
