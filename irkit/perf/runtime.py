"""Pricing cost terms on a hardware description: the model's equations, in one place.

This module is deliberately standalone -- the standard library and numpy
only, no irkit import -- because `--emit python` copies its source into the
emitted module verbatim: the in-process model (`irkit.perf.predict`) and
the emitted one run the same code, so they agree to the last bit.

The model (docs/perf-model.md): for each loop nest, per core (the busiest),

    compute  = sum over instruction kinds of count x seconds per instruction
    chain    = max(accumulation iterations x fp_latency / frequency,
                   strided L1 misses x strided_miss,
                   conflict misses / sets their column reaches x conflict_miss)
    L1       = (loads + STORE_WEIGHT x stores) x 3 / (2 + STORE_WEIGHT) x vector bytes / L1 bandwidth
               + (carried adds x fp_latency + carried entries x store_forward) / frequency
    level l  = lines moved into the level above l x line / bandwidth of l
    DRAM     = lines moved out of the last cache x line x busy cores / DRAM bandwidth
    core     = max(compute, chain, L1)
    memory   = max(each level, DRAM)
    time     = max(core + (1 - MEMORY_OVERLAP) x memory, memory) + parallel-loop entries x fork/join

summed over the nests, plus one call overhead.  Instruction seconds come
from the measured throughputs: an FP instruction (add, mul, FMA, max ...)
costs 2 x lanes / flops_f32 (the peak is FMA lanes x 2); a division,
square root or exp instruction costs lanes / div_f32 (sqrt_f32, exp_f32).
The nest's data is assumed to stay in cache across calls when all the
kernel's buffers fit the level (`WARM`), as in a benchmark's repeated
calls; `cold=True` prices a first call.
"""

from __future__ import annotations

import numpy as np

# ---- the model (everything below is copied into emitted modules) ----

# How much of the time the slowest memory level needs is hidden under the
# core's own work (compute, latency chains, L1).  0 would be ECM's no
# overlap, 1 a roofline's full overlap.  An assumption of the model, not a
# hardware figure: 0.5 fits the validation suite on this host best
# (docs/perf-model.md gives the other rules tried and their errors).
MEMORY_OVERLAP = 0.5

# What a store costs the L1 in load slots.  A 256-bit core has two load ports
# and one store port (2 would say so); 3 also covers the store's address
# generation and the write into the line, and fits the validation suite
# best (docs/perf-model.md).  An assumption of the model, not a hardware figure.
STORE_WEIGHT = 3.0

# The share of a cache the model counts on holding a working set: caches are
# not fully associative and hold other data too.  An assumption of the model,
# not a hardware figure.
CACHE_SHARE = 0.5


def _sets(level, line):
    """Sets of a cache level: lines / ways (a description without `ways`: fully associative)."""
    if level.get("ways"):
        return max(1.0, level["size"] / line / level["ways"])
    return level["size"] / line


# A nest's terms come in three functions (see `price`), so that each term is evaluated only where
# it is needed: the fills at every cache level, the waiting L1 misses at L1, every other term
# (instructions, flops, chains, cores busy) once.
FILL_TERMS = ("lines", "stored_lines", "streamed_lines")
MISS_TERMS = ("strided_lines", "serial_lines")
TERM_GROUPS = ("core", "fills", "misses")


def term_group(key):
    """Which of a nest's functions computes term `key`."""
    if key in FILL_TERMS:
        return "fills"
    if key in MISS_TERMS:
        return "misses"
    return "core"


def price(nests, kernel_terms, env, hw, cold=False):
    """Seconds and breakdown for evaluated terms.

    `nests`: list of (name, core, fills, misses) where each function maps an
    environment to a dict of term values (`TERM_GROUPS`): `core` once, `fills`
    for every cache level (with that level's `cap`, `sets` and `ways` in the
    environment), `misses` for L1; `hw`: the hardware dictionary (see
    `irkit.perf.hardware`).
    """
    levels = hw["levels"]
    line = float(hw["line"])
    lanes32 = hw["simd"] / 32.0
    base = dict(env)
    base.update({"line": line, "lanes32": lanes32, "lanes64": hw["simd"] / 64.0, "cores": float(hw["cores"])})
    kernel_wide = kernel_terms(base)
    kernel_bytes = kernel_wide["kernel_bytes"]
    instr_cost = {
        "fp": 2.0 * lanes32 / hw["flops_f32"],
        "fp64": hw["simd"] / 32.0 / hw["flops_f64"],
        "div": lanes32 / hw["div_f32"] if hw.get("div_f32") else None,
        "sqrt": lanes32 / hw["sqrt_f32"] if hw.get("sqrt_f32") else None,
        "exp": lanes32 / hw["exp_f32"] if hw.get("exp_f32") else None,
        "exp_libm": 1.0 / hw["libm_exp_f32"] if hw.get("libm_exp_f32") else None,
    }
    total = 0.0
    parts = {"compute": 0.0, "chain": 0.0, "L1": 0.0}
    for lv in levels[1:]:
        parts[lv["name"]] = 0.0
    parts["DRAM"] = 0.0
    parts["overhead"] = float(hw.get("call_overhead", 0.0))
    flops = 0.0
    dram_bytes = 0.0
    nest_rows = []
    for name, core_terms, fill_terms, miss_terms in nests:
        t = core_terms(base)
        active = np.maximum(t.get("active", 1.0), 1.0)
        compute = 0.0
        for key, value in t.items():
            if not key.startswith("instr_") or key in ("instr_mem", "instr_store"):
                continue
            kind = key[len("instr_") :]
            cost = instr_cost.get(kind)
            if cost is None:
                field = {"exp_libm": "libm_exp_f32", "fp64": "flops_f64"}.get(kind, kind + "_f32")
                raise KeyError(f"the hardware description has no '{field}', the throughput of {kind} instructions")
            compute = compute + value * cost
        chain = t.get("chain", 0.0) * hw.get("fp_latency", 0.0) / hw["frequency"]
        # an accumulator kept in memory across an outer loop: each entry of the inner loop
        # reloads what the entry before stored, so the entries queue on forwarding + the adds
        carry_cycles = t.get("carry", 0.0) * hw.get("fp_latency", 0.0)
        carry = (carry_cycles + t.get("carry_steps", 0.0) * hw.get("store_forward", 0.0)) / hw["frequency"]
        # L1: load and store instructions, a store weighing STORE_WEIGHT loads; the calibrated
        # bandwidth is a triad's (2 loads + 1 store a vector, counted as 3 x vector bytes)
        mem = t.get("instr_mem", 0.0)
        stores = t.get("instr_store", 0.0)
        slots = (mem - stores + STORE_WEIGHT * stores) * 3.0 / (2.0 + STORE_WEIGHT)
        l1 = slots * (hw["simd"] / 8.0) / levels[0]["bandwidth"]
        l1 = l1 + carry  # the stalled entries do not overlap their own loads and stores
        terms = {"compute": compute, "chain": chain, "L1": l1}
        strided = 0.0
        # traffic into each level from the one below it
        for i, lv in enumerate(levels):
            below = levels[i + 1] if i + 1 < len(levels) else None
            shared = lv.get("shared", 1) > 1
            cap_bytes = lv["size"] * CACHE_SHARE / (active if shared else 1.0)
            sets = _sets(lv, line)
            level_env = dict(base, cap=cap_bytes / line, sets=sets, ways=lv["size"] / line / sets)
            tt = fill_terms(level_env)
            if i == 0:  # strided misses (a column read element by element) wait for their lines
                mm = miss_terms(level_env)
                strided = np.maximum(
                    mm.get("strided_lines", 0.0) * hw.get("strided_miss", 0.0),
                    mm.get("serial_lines", 0.0) * hw.get("conflict_miss", 0.0),
                )
            # fills, and write-backs of stored lines; streamed lines skip the caches and
            # reach DRAM once
            streamed = tt.get("streamed_lines", 0.0) / active
            lines = np.maximum(tt["lines"] + tt.get("stored_lines", 0.0) - 2.0 * streamed, 0.0)
            warm = (not cold) & (kernel_bytes <= lv["size"] * CACHE_SHARE)
            if below is None:
                lines = lines + streamed
                moved = np.where(warm, 0.0, lines * line)
                bw = np.where(active > 1, hw["dram_bandwidth"], hw.get("dram_bandwidth_core", hw["dram_bandwidth"]))
                seconds = moved * active / bw
                terms["DRAM"] = seconds
                dram_bytes = dram_bytes + moved * active
            else:
                moved = np.where(warm, 0.0, lines * line)
                bw = below["bandwidth"]
                if below.get("shared", 1) > 1 and below.get("bandwidth_all"):
                    bw = np.minimum(bw, below["bandwidth_all"] / active)
                terms[below["name"]] = moved / bw
        terms["chain"] = np.maximum(terms["chain"], strided)  # latencies: the longer one sets the pace
        core = np.maximum(np.maximum(terms["compute"], terms["chain"]), terms["L1"])
        memory = 0.0
        for key, v in terms.items():
            if key not in ("compute", "chain", "L1"):
                memory = np.maximum(memory, v)
        nest_time = np.maximum(core + (1.0 - MEMORY_OVERLAP) * memory, memory)
        overhead = t.get("regions", 0.0) * hw.get("parallel_overhead", 0.0)
        nest_time = nest_time + overhead
        total = total + nest_time
        for k, v in terms.items():
            parts[k] = parts.get(k, 0.0) + v
        parts["overhead"] = parts["overhead"] + overhead
        flops = flops + t.get("flops", 0.0)
        nest_rows.append({"nest": name, "seconds": nest_time, **terms, "overhead": overhead})
    total = total + float(hw.get("call_overhead", 0.0))
    # fresh pages of large temporaries fault at their first write, on the cores that write them
    faults = kernel_wide.get("fresh_pages", 0.0) * hw.get("page_fault", 0.0) / float(hw["cores"])
    total = total + faults
    parts["overhead"] = parts["overhead"] + faults
    return {"seconds": total, "breakdown": parts, "flops": flops, "dram_bytes": dram_bytes, "nests": nest_rows}
