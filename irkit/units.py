"""Units of hardware quantities and the fields a hardware description needs.

Hardware is data (DESIGN.md, contract 4): every figure the cost model uses
comes from a description written in the language's hardware syntax.  This
module says which fields exist, which unit family each takes, and converts
a written quantity to base units (bytes, bytes/s, Hz, bits, seconds).
"""

from __future__ import annotations

UNIT_SCALE: dict[str, tuple[str, float]] = {
    "bits": ("bits", 1.0),
    "B": ("bytes", 1.0),
    "KB": ("bytes", 1e3),
    "MB": ("bytes", 1e6),
    "GB": ("bytes", 1e9),
    "KiB": ("bytes", 1024.0),
    "MiB": ("bytes", 1024.0**2),
    "GiB": ("bytes", 1024.0**3),
    "B/s": ("bandwidth", 1.0),
    "KB/s": ("bandwidth", 1e3),
    "MB/s": ("bandwidth", 1e6),
    "GB/s": ("bandwidth", 1e9),
    "TB/s": ("bandwidth", 1e12),
    "KiB/s": ("bandwidth", 1024.0),
    "MiB/s": ("bandwidth", 1024.0**2),
    "GiB/s": ("bandwidth", 1024.0**3),
    "Hz": ("frequency", 1.0),
    "kHz": ("frequency", 1e3),
    "MHz": ("frequency", 1e6),
    "GHz": ("frequency", 1e9),
    "ns": ("latency", 1e-9),
    "us": ("latency", 1e-6),
    "cycles": ("latency", 1.0),
    "FLOP/s": ("rate", 1.0),
    "kFLOP/s": ("rate", 1e3),
    "MFLOP/s": ("rate", 1e6),
    "GFLOP/s": ("rate", 1e9),
    "TFLOP/s": ("rate", 1e12),
}

FAMILY_EXAMPLES = {
    "bits": "bits",
    "bytes": "B, KiB, MiB, GiB",
    "bandwidth": "GB/s, MB/s, GiB/s",
    "frequency": "GHz, MHz",
    "latency": "ns, us or cycles",
    "rate": "GFLOP/s, MFLOP/s, TFLOP/s",
    "count": "no unit",
}

# field -> (unit family, required?) for the top level of a hardware block ...
# The measured shares of a set-conflicting column walk's accesses that miss (irkit.perf.runtime's
# CONFLICT_SHARES has the same keys with their defaults; it imports nothing, being copied into
# emitted modules).
CONFLICT_SHARE_KEYS = ("conflict_share_2", "conflict_share_4", "conflict_share_8")
# The latency classes of an accumulation chain's ops (irkit.perf.runtime.latency_cycles), each a
# `<class>_latency` field in cycles
LATENCY_CLASSES = ("add", "fma", "fold", "max", "vmax", "mul", "div")
CLASS_LATENCY_KEYS = tuple(f"{cls}_latency" for cls in LATENCY_CLASSES)

TOP_FIELDS: dict[str, tuple[str, bool]] = {
    "cores": ("count", True),
    "simd": ("bits", True),
    "frequency": ("frequency", True),
    "fma_units": ("count", False),
    "threads_per_core": ("count", False),
    # Measured throughputs (`irkit calibrate`): floating-point operations per
    # second (an FMA counts 2) for one core and for all cores together ...
    "flops_f32": ("rate", False),
    "flops_f32_all": ("rate", False),
    "flops_f64": ("rate", False),
    "flops_f64_all": ("rate", False),
    # ... vector division, square root and exp (irkit's vectorizable expf),
    # f32 lane-operations per second on one core ...
    "div_f32": ("rate", False),
    "sqrt_f32": ("rate", False),
    "exp_f32": ("rate", False),
    "libm_exp_f32": ("rate", False),  # the C library's expf, called per element (code without relaxed_math)
    # ... the same for f64 (f64 lane results per second; exp_f64 is irkit's relaxed_math irkit_fast_exp) ...
    "div_f64": ("rate", False),
    "sqrt_f64": ("rate", False),
    "exp_f64": ("rate", False),
    "libm_exp_f64": ("rate", False),
    # ... division and square root in code that is not vectorised (results per second, scalar
    # instructions: on Zen 4 one costs a quarter of a 512-bit one) ...
    **{f"{op}_{t}_scalar": ("rate", False) for op in ("div", "sqrt") for t in ("f32", "f64")},
    # ... FMA throughput of one core per instruction width (an FMA counts 2 flops a lane): what a
    # kernel built for a narrower vector (or not vectorised) reaches; only the widths the ISA has ...
    **{f"flops_{t}_{w}": ("rate", False) for t in ("f32", "f64") for w in ("512", "256", "128", "scalar")},
    # ... and fixed costs: one OpenMP parallel loop's fork and join, and one
    # kernel call from the host (irkit's runner).
    "parallel_overhead": ("latency", False),
    "call_overhead": ("latency", False),
    # latency of a dependent floating-point add or FMA (a reduction chain's step)
    "fp_latency": ("latency", False),
    "fp_latency_f64": ("latency", False),  # the same for f64, where it differs
    # a store's value reaching a load of the same address (an accumulator kept in memory across an
    # outer loop pays it once per entry of the inner loop)
    "store_forward": ("latency", False),
    # the first touch of a fresh 4 KiB page (a large temporary is fresh memory at every call)
    "page_fault": ("latency", False),
    # an L1 miss of a strided read (a column, element by element) served by L2, several in flight
    "strided_miss": ("latency", False),
    # an access to a column whose lines all map to one L1 set (rows 4 KiB apart): its misses queue
    "conflict_miss": ("latency", False),
    # Figures fitted on calibration documents (irkit.calibrate.fit): the latency of one op of each
    # class on an accumulation chain (a dependent add, FMA, NaN-correct max, multiply, division) ...
    "add_latency": ("latency", False),
    "fma_latency": ("latency", False),  # measured directly (a chain of scalar FMAs); older descriptions fitted it
    # an in-order ("fold-left") vector reduction's step with a multiply: gcc's `vmulps` and one
    # `vaddss` a lane, what `o[e] += a[e, k] * b[k]` compiles to (fitted)
    "fold_latency": ("latency", False),
    # a vector maximum's reduction step (`omp simd reduction` of irkit's NaN-keeping maximum: two
    # compares, an or and a blend on the accumulator register), fitted
    "vmax_latency": ("latency", False),
    "max_latency": ("latency", False),
    "mul_latency": ("latency", False),
    "div_latency": ("latency", False),
    # ... how far the out-of-order core looks ahead, in the instructions the model counts (the
    # independent chains of successive loop entries it overlaps) ...
    "ooo_window": ("count", False),
    # ... and the TLB: the 4 KiB pages it holds, and what a miss (a page walk) costs an access.
    "tlb_entries": ("count", False),
    "tlb_miss": ("latency", False),
    # ... what a vector access that crosses a cache line costs the L1 beyond an aligned one, in
    # aligned accesses ...
    # ... what a lane of a gather or scatter (a strided vector access) costs beyond its load ...
    "gather_lane": ("latency", False),
    # ... what an entry of a vector loop gcc gets as `omp simd` (a runtime trip count) costs to
    # set up, per slot: one and one per access of the loop ...
    "vector_entry": ("latency", False),
    "split_load": ("count", False),
    "split_load_256": ("count", False),  # ... for explicit 256-bit vectors on a wider core
    "split_load_128": ("count", False),
    # ... and the share of a set-conflicting column walk's accesses that miss when it cycles 2, 4
    # and 8 x the ways of the sets it reaches through them (16 x and more: all).
    **{key: ("count", False) for key in CONFLICT_SHARE_KEYS},
    # The pages numpy's large arrays get (transparent huge pages: 2 MiB where the host gives them).
    "huge_page": ("bytes", False),
}
# ... for a cache level ...
CACHE_FIELDS: dict[str, tuple[str, bool]] = {
    "size": ("bytes", True),
    # the capacity where this level's speed ends, measured (a working-set sweep): in a VM a shared
    # level's reported `size` is the host's, and a guest gets less of it
    "effective_size": ("bytes", False),
    "line": ("bytes", True),
    "bandwidth": ("bandwidth", True),  # of the widest vectors the code is built for
    # the same triad with narrower explicit vectors (L1): what code built for them reaches
    "bandwidth_256": ("bandwidth", False),
    "bandwidth_128": ("bandwidth", False),
    "bandwidth_scalar": ("bandwidth", False),
    "bandwidth_all": ("bandwidth", False),  # all cores together (a shared level's limit)
    # one core's read-only stream, in the bytes of the lines it fills: with `bandwidth` (the triad:
    # three fills and a write-back an element) it says what a fill and a write-back each cost
    "bandwidth_read": ("bandwidth", False),
    "latency": ("latency", False),
    "shared": ("count", False),
    "ways": ("count", False),  # associativity: lines a set holds
    # fitted (irkit.calibrate.fit): what a store costs the L1 in load slots ...
    "store_weight": ("count", False),
    # ... and how much of this level's transfer time hides under the core's work (ECM: 0 none, 1 all);
    # what a strided or a set-conflict miss of the level above costs when this level serves it (the
    # top-level strided_miss and conflict_miss are L2's)
    "overlap": ("count", False),
    "strided_miss": ("latency", False),
    "conflict_miss": ("latency", False),
}
# ... and for DRAM.
DRAM_FIELDS: dict[str, tuple[str, bool]] = {
    "bandwidth": ("bandwidth", True),
    "bandwidth_core": ("bandwidth", False),  # what one core alone gets
    "bandwidth_read_core": ("bandwidth", False),  # ... on a read-only stream (the lines it fills)
    "size": ("bytes", False),
    "latency": ("latency", False),
    "overlap": ("count", False),  # fitted: the share of DRAM transfer time hidden under the core's work
    "strided_miss": ("latency", False),  # fitted: a last-level cache's strided miss served by DRAM
    "conflict_miss": ("latency", False),  # fitted: ... its set-conflict miss
    "unstreamed": ("latency", False),  # fitted: a line no prefetch stream brings, one core's
    "streams": ("count", False),  # measured: rows the prefetchers follow side by side
}


# Text fields of the top level (`cpu "AMD EPYC 9R14"`): where a description came from.  Nothing
# is priced with them; `irkit.calibrate.fingerprint` compares them with the host.
TEXT_FIELDS: dict[str, str] = {
    "cpu": "the CPU's model name (/proc/cpuinfo)",
    "cpu_id": "vendor, family, model and stepping (`AuthenticAMD family 25 model 17 stepping 1`)",
    "isa": "the host's ISA extensions that decide the code (`avx512f avx2 fma`)",
    "march": "the -march the microbenchmarks were built for (`native`, `x86-64-v3`)",
}


def unit_family(unit: str | None) -> str:
    """The family of a unit (`GHz` -> frequency); no unit is a plain count."""
    if unit is None:
        return "count"
    return UNIT_SCALE[unit][0]


def to_base(value: float, unit: str | None) -> float:
    """The value in base units: bytes, bytes/s, Hz, bits, a count, or seconds (ns) / cycles for latency."""
    if unit is None:
        return value
    return value * UNIT_SCALE[unit][1]
