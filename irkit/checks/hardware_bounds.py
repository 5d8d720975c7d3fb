"""Plausible hardware figures: what the description checker refuses even when every unit is right.

A description is data the cost model trusts (DESIGN.md, contract 4), and a
wrong figure prices every kernel wrong without any error: a 20.71 GHz clock
(a dependent-add loop that a core folds), a shared L3 that is the host's
and not the guest's, latencies in the hundreds of cycles.  These checks
refuse what no real machine has, each at the field that is wrong.

The bounds are deliberately generous -- they must accept every host irkit
runs on (Zen 3/4 EPYC, Xeons with 260 or 480 MiB of reported L3, ARM
servers, laptops) and every figure a noisy shared host measures; the
calibration's own checks (`irkit.calibrate.plausible`) are tighter and
re-measure instead of refusing.  docs/calibrate.md ("Plausible values")
lists the same bounds.

- **clock** `frequency` within 0.3-7 GHz;
- **widths** `simd` a multiple of 32 bits within 32-2048; `fma_units` at most 4;
  `threads_per_core` at most 8; `cores` at most 4096;
- **compute** one core's `flops_*` at most clock x lanes x 2 x 4 units x 1.25 (per
  width for `flops_f32_256` etc.); f64 at most 1.25 x f32; `*_all` at most 1.25 x
  cores x one core; `div/sqrt/exp_*` at most clock x lanes x 2 x 1.25;
- **latencies** `fp_latency`, `fp_latency_f64` 1-16 cycles; `store_forward` at
  most 64 cycles; `strided_miss`, `conflict_miss`, a cache's `latency` at most
  1000 cycles; DRAM `latency` at most 2 us; `page_fault` at most 1 ms;
  `parallel_overhead`, `call_overhead` at most 100 ms; the fitted chain latencies
  (`add_latency` ...) 0.25-64 cycles, `ooo_window` at most 10,000 instructions,
  `tlb_entries` 4 to 2^20 pages, `tlb_miss` at most 1 us, `store_weight` 0.1-16,
  `overlap` (a cache level's, DRAM's) 0-1, `conflict_share_2/4/8` 0-1, `split_load[_256|_128]` 0-16 accesses, `gather_lane` and `vector_entry` at most 1 us, a level's or
  DRAM's `strided_miss` and `conflict_miss` at most 2 us, DRAM's `unstreamed` at most 2 us
  and `streams` 1-1024 rows; `huge_page` a power of two
  within 4 KiB-1 GiB;
- **sizes** a `line` a power of two within 16-1024 B; every cache level at least
  as large as the one before it and no larger than `dram size`; `effective_size`
  at most the level's `size`, and no smaller than the level before it's;
- **bandwidths** a level's (one core) at most 1.5 x the level before it's, DRAM
  `bandwidth_core` at most 1.5 x the last cache's `bandwidth` and 1.5 x DRAM
  `bandwidth`, DRAM `bandwidth` at most 1.5 x the last cache's `bandwidth_all`;
  a narrower triad (`bandwidth_128`) at most 1.5 x the next wider one; a
  read-only stream's (`bandwidth_read`, DRAM's `bandwidth_read_core`) 1/3-3 x
  its level's triad; L1 at most
  clock x (simd / 8) B x 4 accesses a cycle x 1.25.

A 1.5 x margin where two measured figures meet is the noise of a shared host
(one core's L1 triad swings between 135 and 275 GB/s on the 2-vCPU VM,
docs/calibrate.md); 1.25 x on a physical bound covers turbo above the written
clock.
"""

from __future__ import annotations

from dataclasses import dataclass

from irkit.diagnostics import Diagnostic, at_op
from irkit.dialects import design as d
from irkit.units import CLASS_LATENCY_KEYS, CONFLICT_SHARE_KEYS, to_base

GHZ = 1e9
MIN_CLOCK, MAX_CLOCK = 0.3 * GHZ, 7.0 * GHZ
MAX_CORES = 4096
MAX_THREADS_PER_CORE = 8
MAX_FMA_UNITS = 4
READ_RATIO = (1 / 3, 3.0)  # a read-only stream's rate over its level's triad's (irkit.calibrate.plausible: 0.5-3)
PHYSICAL_MARGIN = 1.25  # a physical bound's slack: turbo above the written clock, rounding
NOISE = 1.5  # two measured figures that should be ordered may be this far the wrong way (a noisy host)
FP_LATENCY = (1.0, 16.0)  # cycles: no FPU adds faster than a cycle or slower than 16 (A64FX: 9)
MAX_STORE_FORWARD = 64.0  # cycles
MAX_MISS_CYCLES = 1000.0  # a cache's latency, a strided or conflicting miss
MAX_DRAM_LATENCY = 2e-6  # s
MAX_PAGE_FAULT = 1e-3  # s
MAX_OVERHEAD = 0.1  # s: a parallel loop's fork and join (8 ms on a busy 2-vCPU host), a kernel call
LINE = (16, 1024)  # bytes
ACCESSES_PER_CYCLE = 4  # full-width L1 loads + stores a cycle (2-3 loads and 1-2 stores on current cores)
WIDTH_BITS = {"512": 512, "256": 256, "128": 128}
# Figures fitted on calibration documents (irkit.calibrate.fit):
CHAIN_LATENCY = (0.25, 64.0)  # cycles of one op of a chain (a division's latency reaches tens)
OOO_WINDOW = (0.0, 10000.0)  # instructions
TLB_ENTRIES = (4.0, 1 << 20)  # pages
MAX_TLB_MISS = 1e-6  # s
STORE_WEIGHT = (0.1, 16.0)  # load slots
OVERLAP = (0.0, 1.0)
SPLIT_LOAD = (0.0, 16.0)  # aligned accesses a line-crossing one costs beyond its own
MAX_DEEP_MISS = 2e-6  # s: a miss served by L3 or DRAM (DRAM's latency bound)
HUGE_PAGE = (4096, 1 << 30)  # bytes
MAX_GATHER_LANE = 1e-6  # s
MAX_VECTOR_ENTRY = 1e-6  # s
MAX_STREAMS = 1024


@dataclass
class _Field:
    op: d.HwFieldOp
    value: float  # as written
    unit: str | None

    @property
    def base(self) -> float:
        return to_base(self.value, self.unit)

    @property
    def text(self) -> str:
        from irkit.backends.design_text import format_number

        return format_number(self.value) + (f" {self.unit}" if self.unit else "")


def _table(owner) -> dict[str, _Field]:
    out: dict[str, _Field] = {}
    for op in owner.body.block.ops:
        if isinstance(op, d.HwFieldOp):
            out.setdefault(op.key.data, _Field(op, op.value.value.data, None if op.unit is None else op.unit.data))
    return out


class _Checker:
    def __init__(self, hw: d.HardwareOp):
        self.top = _table(hw)
        self.caches = [(lv.level.data, _table(lv)) for lv in hw.body.block.ops if isinstance(lv, d.HwLevelOp) and not lv.is_dram]
        drams = [_table(lv) for lv in hw.body.block.ops if isinstance(lv, d.HwLevelOp) and lv.is_dram]
        self.dram = drams[0] if drams else {}
        self.diags: list[Diagnostic] = []
        self.clock = self.top["frequency"].base if "frequency" in self.top else None

    def refuse(self, f: _Field, what: str, message: str) -> None:
        key = f.op.key.data
        self.diags.append(at_op("error", f"{what}: {key} {f.text} is not plausible: {message}", f.op, key))

    # ---- helpers
    def cycles(self, f: _Field) -> float | None:
        if f.unit == "cycles":
            return f.value
        return None if self.clock is None else f.base * self.clock

    def seconds(self, f: _Field) -> float | None:
        if f.unit == "cycles":
            return None if self.clock is None else f.value / self.clock
        return f.base

    # ---- the top level
    def top_level(self) -> None:
        top, what = self.top, "the hardware block"
        if self.clock is not None and not MIN_CLOCK <= self.clock <= MAX_CLOCK:
            self.refuse(
                top["frequency"], what,
                "no core runs outside 0.3-7 GHz (a dependency chain the core folds or fuses measures more "
                "instructions a cycle than one; `irkit calibrate` measures the clock with a chain of dependent imuls)",
            )  # fmt: skip
        if "simd" in top:
            bits = top["simd"].base
            if bits % 32 or not 32 <= bits <= 2048:
                self.refuse(top["simd"], what, "a vector is a multiple of 32 bits within 32-2048")
        for key, limit in (("cores", MAX_CORES), ("threads_per_core", MAX_THREADS_PER_CORE), ("fma_units", MAX_FMA_UNITS)):
            if key in top and top[key].base > limit:
                self.refuse(top[key], what, f"at most {limit}")
        self.compute()
        self.latencies()

    def compute(self) -> None:
        top, what, clock = self.top, "the hardware block", self.clock
        simd = top["simd"].base if "simd" in top else None
        cores = top["cores"].base if "cores" in top else None
        for t, lane in (("f32", 32), ("f64", 64)):
            one = top.get(f"flops_{t}")
            widths = [(f"flops_{t}", simd)] + [
                (f"flops_{t}_{w}", WIDTH_BITS.get(w, lane)) for w in ("512", "256", "128", "scalar")
            ]
            for key, bits in widths:
                f = top.get(key)
                if f is None or clock is None or bits is None:
                    continue
                peak = clock * max(1.0, bits / lane) * 2 * MAX_FMA_UNITS * PHYSICAL_MARGIN
                if f.base > peak:
                    self.refuse(
                        f, what,
                        f"more than the clock x {max(1, int(bits) // lane)} lanes x 2 flops x {MAX_FMA_UNITS} FMA units "
                        f"({peak / 1e9:.4g} GFLOP/s with the 1.25 x margin)",
                    )  # fmt: skip
            every = top.get(f"flops_{t}_all")
            if every is not None and one is not None and cores is not None:
                if every.base > cores * one.base * PHYSICAL_MARGIN:
                    self.refuse(every, what, f"more than {cores:g} cores x flops_{t} {one.text} (with a 1.25 x margin)")
        for suffix in ("", "_512", "_256", "_128", "_scalar", "_all"):
            f32, f64 = top.get(f"flops_f32{suffix}"), top.get(f"flops_f64{suffix}")
            if f32 is not None and f64 is not None and f64.base > f32.base * PHYSICAL_MARGIN:
                self.refuse(f64, what, f"more than 1.25 x flops_f32{suffix} {f32.text}: an f64 lane is twice an f32 one")
        if clock is None or simd is None:
            return
        for t, lane in (("f32", 32), ("f64", 64)):
            bound = clock * simd / lane * 2 * PHYSICAL_MARGIN
            for op in ("div", "sqrt", "exp", "libm_exp"):
                f = top.get(f"{op}_{t}")
                if f is not None and f.base > bound:
                    self.refuse(
                        f, what, f"more than 2 results a lane a cycle ({bound / 1e9:.4g} G/s at this clock and width)"
                    )

    def latencies(self) -> None:
        top, what = self.top, "the hardware block"
        for key in ("fp_latency", "fp_latency_f64"):
            f = top.get(key)
            c = None if f is None else self.cycles(f)
            if f is not None and c is not None and not FP_LATENCY[0] <= c <= FP_LATENCY[1]:
                self.refuse(f, what, f"a floating-point add takes 1-16 cycles on every core (this is {c:.3g})")
        f = top.get("store_forward")
        c = None if f is None else self.cycles(f)
        if f is not None and c is not None and c > MAX_STORE_FORWARD:
            self.refuse(f, what, f"store-to-load forwarding takes at most {MAX_STORE_FORWARD:g} cycles (this is {c:.3g})")
        for key in ("strided_miss", "conflict_miss"):
            f = top.get(key)
            c = None if f is None else self.cycles(f)
            if f is not None and c is not None and c > MAX_MISS_CYCLES:
                self.refuse(f, what, f"an access served by a cache takes at most {MAX_MISS_CYCLES:g} cycles (this is {c:.4g})")
        for key in CLASS_LATENCY_KEYS:
            f = top.get(key)
            c = None if f is None else self.cycles(f)
            if f is not None and c is not None and not CHAIN_LATENCY[0] <= c <= CHAIN_LATENCY[1]:
                self.refuse(f, what, f"an op on a dependency chain takes {CHAIN_LATENCY[0]:g}-{CHAIN_LATENCY[1]:g} cycles (this is {c:.3g})")
        for key, (lo, hi), text in (
            ("ooo_window", OOO_WINDOW, "instructions an out-of-order core looks ahead"),
            ("tlb_entries", TLB_ENTRIES, "pages a TLB holds"),
            *((key, (0.0, 1.0), "a share of a column walk's accesses") for key in CONFLICT_SHARE_KEYS),
        ):
            f = top.get(key)
            if f is not None and not lo <= f.base <= hi:
                self.refuse(f, what, f"{text}: {lo:g}-{hi:g}")
        for key, limit, text in (("tlb_miss", MAX_TLB_MISS, "a page walk"), ("gather_lane", MAX_GATHER_LANE, "a gathered lane"),
                                 ("vector_entry", MAX_VECTOR_ENTRY, "a vector loop's set-up slot")):
            f = top.get(key)
            s = None if f is None else self.seconds(f)
            if f is not None and s is not None and not 0 <= s <= limit:
                self.refuse(f, what, f"{text} takes at most {limit * 1e6:g} us")
        for key in ("split_load", "split_load_256", "split_load_128"):
            f = top.get(key)
            if f is not None and not SPLIT_LOAD[0] <= f.base <= SPLIT_LOAD[1]:
                self.refuse(f, what, f"a misaligned access costs {SPLIT_LOAD[0]:g}-{SPLIT_LOAD[1]:g} aligned ones more")
        f = top.get("huge_page")
        if f is not None:
            n = int(f.base)
            if n != f.base or n & (n - 1) or not HUGE_PAGE[0] <= n <= HUGE_PAGE[1]:
                self.refuse(f, what, "a page is a power of two within 4 KiB-1 GiB")
        for key, limit, text in (
            ("page_fault", MAX_PAGE_FAULT, "1 ms"),
            ("parallel_overhead", MAX_OVERHEAD, "100 ms"),
            ("call_overhead", MAX_OVERHEAD, "100 ms"),
        ):
            f = top.get(key)
            s = None if f is None else self.seconds(f)
            if f is not None and s is not None and s > limit:
                self.refuse(f, what, f"at most {text}")

    # ---- memory levels
    def levels(self) -> None:
        dram_size = self.dram.get("size")
        before: tuple[str, dict[str, _Field]] | None = None
        for name, fields in self.caches:
            what = f"cache {name}"
            self.level_fields(what, fields)
            if dram_size is not None and "size" in fields and fields["size"].base > dram_size.base:
                self.refuse(fields["size"], what, f"larger than the memory (dram size {dram_size.text})")
            if before is not None:
                self.ordered(before, (name, fields))
            before = (name, fields)
        self.dram_level(before)

    def level_fields(self, what: str, fields: dict[str, _Field]) -> None:
        line = fields.get("line")
        if line is not None:
            n = int(line.base)
            if n != line.base or n & (n - 1) or not LINE[0] <= n <= LINE[1]:
                self.refuse(line, what, "a cache line is a power of two within 16-1024 B")
        size, effective = fields.get("size"), fields.get("effective_size")
        if size is not None and effective is not None and effective.base > size.base:
            self.refuse(effective, what, f"more than the level's size {size.text}: a level holds at most its size")
        for key, (lo, hi), text in (
            ("store_weight", STORE_WEIGHT, "a store costs an L1 this many loads"),
            ("overlap", OVERLAP, "the share of a transfer hidden under the core's work"),
        ):
            f = fields.get(key)
            if f is not None and not lo <= f.base <= hi:
                self.refuse(f, what, f"{text}: {lo:g}-{hi:g}")
        self.deep_misses(what, fields)
        latency = fields.get("latency")
        c = None if latency is None else self.cycles(latency)
        if latency is not None and c is not None and c > MAX_MISS_CYCLES:
            self.refuse(latency, what, f"a cache answers in at most {MAX_MISS_CYCLES:g} cycles (this is {c:.4g})")
        full = fields.get("bandwidth")
        self.read_rate(what, fields.get("bandwidth_read"), full, "bandwidth")
        wider = full
        for key in ("bandwidth_256", "bandwidth_128", "bandwidth_scalar"):
            f = fields.get(key)
            if f is None:
                continue
            if wider is not None and f.base > wider.base * NOISE:
                name = wider.op.key.data
                self.refuse(f, what, f"more than 1.5 x {name} {wider.text}: narrower vectors move fewer bytes an access")
            wider = f
        if what == f"cache {self.caches[0][0]}" and full is not None and self.clock and "simd" in self.top:
            peak = self.clock * self.top["simd"].base / 8 * ACCESSES_PER_CYCLE * PHYSICAL_MARGIN
            if full.base > peak:
                self.refuse(
                    full, what,
                    f"more than {ACCESSES_PER_CYCLE} full-width accesses a cycle at this clock ({peak / 1e9:.4g} GB/s "
                    "with the 1.25 x margin)",
                )  # fmt: skip

    def ordered(self, before: tuple[str, dict[str, _Field]], here: tuple[str, dict[str, _Field]]) -> None:
        (up, a), (name, b) = before, here
        what = f"cache {name}"
        if "size" in a and "size" in b and b["size"].base < a["size"].base:
            self.refuse(b["size"], what, f"smaller than cache {up}'s size {a['size'].text}: a level further out holds more")
        ea, eb = a.get("effective_size"), b.get("effective_size")
        if ea is not None and eb is not None and eb.base < ea.base:
            self.refuse(eb, what, f"smaller than cache {up}'s effective_size {ea.text}")
        if "bandwidth" in a and "bandwidth" in b and b["bandwidth"].base > a["bandwidth"].base * NOISE:
            self.refuse(
                b["bandwidth"], what,
                f"more than 1.5 x cache {up}'s bandwidth {a['bandwidth'].text}: a level further out is slower",
            )  # fmt: skip

    def read_rate(self, what: str, read: _Field | None, triad: _Field | None, name: str) -> None:
        """A read-only stream's rate (`bandwidth_read`) within 1/3-3 x the same level's triad: its three
        fills alone take at most the triad's time, and a write-back costs a few fills at most."""
        if read is None or triad is None or triad.base <= 0:
            return
        if not READ_RATIO[0] <= read.base / triad.base <= READ_RATIO[1]:
            self.refuse(
                read, what,
                f"{read.base / triad.base:.3g} x the triad's {name} {triad.text}: a read-only stream runs at "
                f"{READ_RATIO[0]:.3g}-{READ_RATIO[1]:g} x it",
            )  # fmt: skip

    def deep_misses(self, what: str, fields: dict[str, _Field]) -> None:
        """A level's or DRAM's strided and conflict misses (fitted): at most DRAM's latency bound."""
        for key in ("strided_miss", "conflict_miss"):
            f = fields.get(key)
            s = None if f is None else self.seconds(f)
            if f is not None and s is not None and not 0 <= s <= MAX_DEEP_MISS:
                self.refuse(f, what, f"a miss served by a cache or DRAM takes at most {MAX_DEEP_MISS * 1e6:g} us")

    def dram_level(self, last: tuple[str, dict[str, _Field]] | None) -> None:
        dram, what = self.dram, "dram"
        self.deep_misses(what, dram)
        overlap = dram.get("overlap")
        if overlap is not None and not OVERLAP[0] <= overlap.base <= OVERLAP[1]:
            self.refuse(overlap, what, f"the share of a transfer hidden under the core's work: {OVERLAP[0]:g}-{OVERLAP[1]:g}")
        core, every = dram.get("bandwidth_core"), dram.get("bandwidth")
        self.read_rate(what, dram.get("bandwidth_read_core"), core, "bandwidth_core")
        if last is not None:
            name, fields = last
            bw, bw_all = fields.get("bandwidth"), fields.get("bandwidth_all")
            if core is not None and bw is not None and core.base > bw.base * NOISE:
                self.refuse(core, what, f"more than 1.5 x cache {name}'s bandwidth {bw.text}: DRAM is slower than a cache")
            if every is not None and bw_all is not None and every.base > bw_all.base * NOISE:
                self.refuse(
                    every, what, f"more than 1.5 x cache {name}'s bandwidth_all {bw_all.text}: DRAM is slower than a cache"
                )
        if core is not None and every is not None and core.base > every.base * NOISE:
            self.refuse(core, what, f"more than 1.5 x the all-core bandwidth {every.text}: one core gets at most all of it")
        for key in ("latency", "unstreamed"):
            f = dram.get(key)
            s = None if f is None else self.seconds(f)
            if f is not None and s is not None and not 0 <= s <= MAX_DRAM_LATENCY:
                self.refuse(f, what, "DRAM answers in at most 2 us")
        streams = dram.get("streams")
        if streams is not None and not 1 <= streams.base <= MAX_STREAMS:
            self.refuse(streams, what, f"rows prefetchers follow at once: 1-{MAX_STREAMS}")


def check_plausible(hw: d.HardwareOp) -> list[Diagnostic]:
    """Refusals of implausible figures in a hardware block whose fields and units are already right."""
    checker = _Checker(hw)
    checker.top_level()
    checker.levels()
    return checker.diags
