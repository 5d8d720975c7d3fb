"""What the host says about itself: cache levels, SIMD width, CPU model, threads.

Sizes are read, not measured: Linux publishes the cache hierarchy under
`/sys/devices/system/cpu/cpu0/cache/index*/` (`level`, `type`, `size`,
`coherency_line_size`, `shared_cpu_list`), and measuring capacities by
timing is slow and unreliable on a shared host.  The microbenchmarks then
choose their array sizes from these figures (`irkit.calibrate.measure`).

- Instruction caches are skipped; a level is `L<level>` (`L1`, `L2`, ...).
- `shared` is how many cores share the level: the CPUs `shared_cpu_list`
  names (`0-1,4` is 3), with the hardware threads of one core (SMT
  siblings, same `core_id` in the same package) counted once.
- The SIMD width comes from the `/proc/cpuinfo` flags: `avx512f` 512 bits,
  `avx2` or `avx` 256, anything else 128 (SSE2, NEON).
- The thread count is `OMP_NUM_THREADS` (its first entry) when set, else the
  CPUs of this process's affinity mask (`os.sched_getaffinity`): what
  irkit's OpenMP kernels would use.
- The CPU's identity (`CpuId`: vendor, family, model, stepping, model name,
  flags) and the clocks the system states -- `/proc/cpuinfo` "cpu MHz" and
  `/sys/.../cpufreq` (`cpuinfo_max_freq`, `base_frequency`), where they exist
  -- are what a measured clock is checked against (`irkit.calibrate.plausible`)
  and what a description records (`irkit.calibrate.fingerprint`).

Every function takes its root path, so tests read a fake tree.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from irkit.calibrate import CalibrateError

SYS_CPU = Path("/sys/devices/system/cpu")
PROC_CPUINFO = Path("/proc/cpuinfo")
PROC_MEMINFO = Path("/proc/meminfo")

_SIZE = re.compile(r"^\s*(\d+)\s*([KMG]?)i?B?\s*$", re.IGNORECASE)
_SCALE = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}


@dataclass(frozen=True)
class CacheLevel:
    """One data (or unified) cache level as seen from CPU 0."""

    level: int
    size: int  # bytes, of one instance of the level
    line: int  # bytes
    shared: int = 1  # cores sharing one instance
    ways: int | None = None  # associativity (`ways_of_associativity`), when /sys says

    @property
    def name(self) -> str:
        return f"L{self.level}"


@dataclass(frozen=True)
class CpuId:
    """Who the CPU is, from the first processor of /proc/cpuinfo (unknowns empty or None)."""

    vendor: str = ""  # vendor_id: GenuineIntel, AuthenticAMD
    family: int | None = None
    model: int | None = None
    stepping: int | None = None
    name: str = "unknown CPU"  # model name
    flags: frozenset[str] = frozenset()
    mhz: float | None = None  # "cpu MHz": the current clock on bare metal, the nominal one in most VMs


@dataclass(frozen=True)
class CpuFreq:
    """The clocks /sys/devices/system/cpu/cpu0/cpufreq states, in Hz (None where absent: most VMs)."""

    max: float | None = None  # cpuinfo_max_freq (intel_pstate: the top turbo; acpi-cpufreq: often no boost)
    min: float | None = None  # cpuinfo_min_freq
    base: float | None = None  # base_frequency (intel_pstate)


@dataclass
class Host:
    """Everything detected (not measured) about the machine."""

    model: str
    simd: int  # bits
    threads: int  # threads the all-core measurements use
    threads_source: str  # "OMP_NUM_THREADS" or "affinity mask"
    caches: list[CacheLevel]
    threads_per_core: int = 1
    cpus: int = 0  # CPUs in the affinity mask (0: unknown)
    memory: int | None = None  # bytes of RAM (MemTotal)
    available: int | None = None  # bytes free for the benchmark's arrays (MemAvailable)
    flags: set[str] = field(default_factory=set)
    cpu: CpuId = field(default_factory=CpuId)
    cpufreq: CpuFreq = field(default_factory=CpuFreq)


def parse_size(text: str) -> int:
    """`32K` -> 32768, `16M`, `512` (bytes); the forms `/sys` uses."""
    m = _SIZE.match(text)
    if not m:
        raise ValueError(f"not a cache size: {text.strip()!r}")
    return int(m.group(1)) * _SCALE[m.group(2).upper()]


def parse_cpu_list(text: str) -> list[int]:
    """`0-3,8,10-11` -> [0, 1, 2, 3, 8, 10, 11] (the kernel's cpulist format)."""
    cpus: list[int] = []
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        if sep:
            cpus.extend(range(int(lo), int(hi) + 1))
        else:
            cpus.append(int(lo))
    return cpus


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError as exc:
        raise CalibrateError(f"cannot read {path}: {exc.strerror or exc}") from None


def count_cores(cpus: list[int], sys_cpu: Path = SYS_CPU) -> int:
    """How many cores the logical `cpus` are: hardware threads of one core (SMT siblings) count once.

    A core is (`physical_package_id`, `core_id`) from each CPU's topology;
    a CPU whose topology cannot be read counts as a core of its own.
    """
    cores: set[tuple[str, ...]] = set()
    for cpu in cpus:
        topology = sys_cpu / f"cpu{cpu}" / "topology"
        try:
            package = (topology / "physical_package_id").read_text().strip()
            core = (topology / "core_id").read_text().strip()
            cores.add((package, core))
        except OSError:
            cores.add(("cpu", str(cpu)))
    return max(1, len(cores))


def detect_caches(root: Path = SYS_CPU / "cpu0" / "cache") -> list[CacheLevel]:
    """The data and unified cache levels of CPU 0, closest first."""
    try:
        entries = sorted(p for p in root.iterdir() if p.name.startswith("index"))
    except OSError as exc:
        raise CalibrateError(f"cannot read the cache hierarchy from {root}: {exc.strerror or exc}") from None
    levels: dict[int, CacheLevel] = {}
    for entry in entries:
        kind = _read(entry / "type")
        if kind.lower() == "instruction":
            continue
        try:
            level = int(_read(entry / "level"))
            size = parse_size(_read(entry / "size"))
            line = int(_read(entry / "coherency_line_size"))
            shared_path = entry / "shared_cpu_list"
            shared = count_cores(parse_cpu_list(_read(shared_path)), root.parent.parent) if shared_path.exists() else 1
        except ValueError as exc:
            raise CalibrateError(f"cannot parse the cache description in {entry}: {exc}") from None
        if size <= 0 or line <= 0:
            continue
        ways_text = _read(entry / "ways_of_associativity") if (entry / "ways_of_associativity").exists() else ""
        ways = int(ways_text) if ways_text.strip().isdigit() and int(ways_text) > 0 else None
        levels.setdefault(level, CacheLevel(level, size, line, max(shared, 1), ways))
    if not levels:
        raise CalibrateError(f"no data cache levels are described under {root}")
    return [levels[k] for k in sorted(levels)]


def read_cpuinfo(path: Path = PROC_CPUINFO) -> tuple[str, set[str]]:
    """(model name, feature flags) of the first CPU in /proc/cpuinfo; unknowns are empty."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "unknown CPU", set()
    model, flags = "", set()
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key = key.strip().lower()
        if key in ("model name", "cpu model", "processor") and not model and not value.strip().isdigit():
            model = value.strip()
        elif key in ("flags", "features") and not flags:
            flags = set(value.split())
    return model or "unknown CPU", flags


def read_cpu(path: Path = PROC_CPUINFO) -> CpuId:
    """The identity of the first CPU in /proc/cpuinfo (an unreadable file gives an unknown CPU)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return CpuId()
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if fields:
                break  # the first processor's block only
            continue
        key, sep, value = line.partition(":")
        if sep:
            fields.setdefault(key.strip().lower(), value.strip())

    def number(key: str) -> int | None:
        value = fields.get(key, "")
        return int(value, 0) if re.fullmatch(r"\d+|0x[0-9a-fA-F]+", value) else None

    try:
        mhz = float(fields.get("cpu mhz", "")) * 1e6 or None
    except ValueError:
        mhz = None
    model, flags = read_cpuinfo(path)
    return CpuId(
        vendor=fields.get("vendor_id", fields.get("cpu implementer", "")),
        family=number("cpu family"),
        model=number("model"),
        stepping=number("stepping"),
        name=model,
        flags=frozenset(flags),
        mhz=mhz,
    )


def read_cpufreq(root: Path = SYS_CPU / "cpu0" / "cpufreq") -> CpuFreq:
    """The clocks cpufreq states for CPU 0 (its files are in kHz)."""

    def khz(name: str) -> float | None:
        try:
            text = (root / name).read_text().strip()
        except OSError:
            return None
        return int(text) * 1e3 if text.isdigit() and int(text) > 0 else None

    return CpuFreq(max=khz("cpuinfo_max_freq"), min=khz("cpuinfo_min_freq"), base=khz("base_frequency"))


def simd_bits(flags: set[str]) -> int:
    """512 with AVX-512F, 256 with AVX2 or AVX, else 128."""
    if "avx512f" in flags:
        return 512
    if "avx2" in flags or "avx" in flags:
        return 256
    return 128


def thread_count(environ: dict[str, str] | None = None) -> tuple[int, str]:
    """(threads, where the number came from): `OMP_NUM_THREADS`, else the affinity mask."""
    env = os.environ if environ is None else environ
    value = env.get("OMP_NUM_THREADS", "").strip()
    if value:
        first = value.split(",")[0].strip()
        if not first.isdigit() or int(first) < 1:
            raise CalibrateError(f"OMP_NUM_THREADS={value!r} is not a positive number of threads")
        return int(first), "OMP_NUM_THREADS"
    try:
        return len(os.sched_getaffinity(0)), "affinity mask"
    except (AttributeError, OSError):
        return os.cpu_count() or 1, "CPU count"


def affinity_cpus() -> int:
    """CPUs this process may run on (0 when unknown)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 0


def threads_per_core(root: Path = SYS_CPU / "cpu0" / "topology") -> int:
    """Hardware threads of CPU 0's core (1 when unknown)."""
    try:
        return max(1, len(parse_cpu_list((root / "thread_siblings_list").read_text())))
    except (OSError, ValueError):
        return 1


def meminfo(path: Path = PROC_MEMINFO) -> tuple[int | None, int | None]:
    """(MemTotal, MemAvailable) in bytes, None when unknown."""
    values: dict[str, int] = {}
    try:
        for line in path.read_text().splitlines():
            key, _, rest = line.partition(":")
            words = rest.split()
            if words and words[0].isdigit():
                values[key.strip()] = int(words[0]) * (1024 if len(words) > 1 and words[1] == "kB" else 1)
    except OSError:
        pass
    return values.get("MemTotal"), values.get("MemAvailable")


def detect(
    sys_cpu: Path = SYS_CPU,
    cpuinfo: Path = PROC_CPUINFO,
    proc_meminfo: Path = PROC_MEMINFO,
    environ: dict[str, str] | None = None,
) -> Host:
    """The host as the files under `sys_cpu` and `/proc` describe it."""
    caches = detect_caches(sys_cpu / "cpu0" / "cache")
    model, flags = read_cpuinfo(cpuinfo)
    threads, source = thread_count(environ)
    total, available = meminfo(proc_meminfo)
    return Host(
        model=model,
        simd=simd_bits(flags),
        threads=threads,
        threads_source=source,
        caches=caches,
        threads_per_core=threads_per_core(sys_cpu / "cpu0" / "topology"),
        cpus=affinity_cpus(),
        memory=total,
        available=available,
        flags=flags,
        cpu=read_cpu(cpuinfo),
        cpufreq=read_cpufreq(sys_cpu / "cpu0" / "cpufreq"),
    )


SYS_THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")


def huge_page_bytes(thp: Path = SYS_THP, proc_meminfo: Path = PROC_MEMINFO) -> int | None:
    """The pages numpy's large arrays get: the huge page size where transparent huge pages are
    on for processes that ask (`[always]` or `[madvise]`: numpy asks for its arrays of 4 MiB and
    more), else None (4 KiB pages).  Linux only; elsewhere None."""
    try:
        mode = thp.read_text()
    except OSError:
        return None
    if "[always]" not in mode and "[madvise]" not in mode:
        return None
    try:
        for line in proc_meminfo.read_text().splitlines():
            key, _, rest = line.partition(":")
            words = rest.split()
            if key.strip() == "Hugepagesize" and words and words[0].isdigit():
                return int(words[0]) * (1024 if len(words) > 1 and words[1] == "kB" else 1)
    except OSError:
        return None
    return None
