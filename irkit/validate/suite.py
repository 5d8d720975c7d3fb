"""The validation suite: every example document x several schedules x several sizes.

A *variant* is an example document with its `schedule` blocks replaced
(the rest of the text -- tensors, layouts, hardware, assumptions -- is the
example's own):

- `own`: the example's schedules, unchanged;
- `naive`: no schedule at all (every stage in its initial loop order,
  serial, no vectorization directive; temporaries computed in full);
- `serial`: the example's schedules without their `parallel` directives;
- kernel-specific alternatives written out below (a simple loop order,
  unfused stages, other tile sizes, no vector directive).

Each kernel's sizes run from cache-resident (all data fits L2) through
L3-resident to DRAM-bound (more than 32 MiB of data), chosen so that the
slowest schedule stays under about a second a call and the whole run
under four minutes on a 2-core host.  The schedules of one kernel are
measured and predicted at the same sizes, so their orders can be compared
(Kendall's tau).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from irkit.diagnostics import Diagnostic, DiagnosticError


def bundled_examples() -> Path:
    """The example documents the suite is built from: the installed `irkit.examples` package
    (`examples/` of the source tree, installed as package data by setup.py)."""
    from importlib import resources

    try:
        return Path(str(resources.files("irkit.examples")))
    except ModuleNotFoundError:  # a source tree that was never installed
        return Path(__file__).resolve().parents[2] / "examples"


EXAMPLES_DIR = bundled_examples()

# ---- rewriting a document's schedules -----------------------------------------

_SCHEDULE = re.compile(r"^[ \t]*schedule[ \t]+([A-Za-z_][A-Za-z0-9_]*)[ \t]*\{", re.MULTILINE)


@dataclass(frozen=True)
class ScheduleBlock:
    stage: str
    start: int  # offset of the line holding `schedule`, or of the comment lines right above it
    end: int  # offset just past the closing `}` and the rest of its line
    body: str  # the text between the braces


def _closing_brace(text: str, pos: int) -> int:
    """Offset of the `}` matching the `{` just before `pos`, skipping `#` comments."""
    depth = 1
    i = pos
    while i < len(text):
        ch = text[i]
        if ch == "#":
            newline = text.find("\n", i)
            i = len(text) if newline < 0 else newline
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise ValueError("unbalanced braces in a schedule block")


def schedule_blocks(text: str) -> list[ScheduleBlock]:
    """The `schedule STAGE { ... }` blocks of a document, in order."""
    blocks = []
    for m in _SCHEDULE.finditer(text):
        # a `schedule` inside a comment is not a block
        line_start = text.rfind("\n", 0, m.start()) + 1
        if "#" in text[line_start : m.start()]:
            continue
        close = _closing_brace(text, m.end())
        newline = text.find("\n", close)
        end = len(text) if newline < 0 else newline + 1
        blocks.append(ScheduleBlock(m.group(1), _leading_comments(text, m.start()), end, text[m.end() : close]))
    return blocks


def _leading_comments(text: str, start: int) -> int:
    """Where the comment lines directly above the line at `start` begin (they describe the block)."""
    while start > 0:
        prev = text.rfind("\n", 0, start - 1) + 1
        if not text[prev : start - 1].lstrip().startswith("#"):
            break
        start = prev
    return start


def directives(body: str) -> list[str]:
    """The directives of a schedule body, comments dropped (split at newlines and `;`)."""
    out = []
    for line in body.splitlines():
        line = line.split("#", 1)[0]
        out += [d.strip() for d in line.split(";") if d.strip()]
    return out


def format_schedules(schedules: dict[str, list[str]], indent: str = "  ") -> str:
    return "".join(
        f"{indent}schedule {stage} {{\n" + "".join(f"{indent}  {d}\n" for d in dirs) + f"{indent}}}\n"
        for stage, dirs in schedules.items()
    )


def replace_schedules(text: str, schedules: dict[str, list[str]], comment: str = "") -> str:
    """`text` with every schedule block removed and `schedules` (stage -> directives) put where the first was.

    A document without schedule blocks gets the new ones before its closing
    brace.  `comment` (one line) is written above them.
    """
    blocks = schedule_blocks(text)
    head = f"  # {comment}\n" if comment else ""
    new = head + format_schedules(schedules) if schedules or comment else ""
    if not blocks:
        close = text.rstrip().rfind("}")
        if close < 0:
            raise ValueError("not a design document: no closing brace")
        return text[:close] + ("\n" + new if new else "") + text[close:]
    out, pos = [], 0
    for i, block in enumerate(blocks):
        out.append(text[pos : block.start])
        if i == 0:
            out.append(new)
        pos = block.end
    out.append(text[pos:])
    return "".join(out)


def own_schedules(text: str) -> dict[str, list[str]]:
    return {b.stage: directives(b.body) for b in schedule_blocks(text)}


# ---- variants -----------------------------------------------------------------

Schedules = dict[str, list[str]]


@dataclass(frozen=True)
class Variant:
    name: str
    description: str
    make: Callable[[Schedules], Schedules | None]  # the example's schedules -> the variant's (None: unchanged)


def _own(s: Schedules) -> Schedules | None:
    return None


def _naive(s: Schedules) -> Schedules:
    return {}


def _serial(s: Schedules) -> Schedules:
    return {stage: [d for d in dirs if not d.startswith("parallel ")] for stage, dirs in s.items()}


def _novec(s: Schedules) -> Schedules:
    return {stage: [d for d in dirs if not d.startswith("vectorize ")] for stage, dirs in s.items()}


def _fixed(schedules: dict[str, str]) -> Callable[[Schedules], Schedules]:
    def make(s: Schedules) -> Schedules:
        return {stage: directives(body) for stage, body in schedules.items()}

    return make


OWN = Variant("own", "the example's schedule", _own)
NAIVE = Variant("naive", "no schedule: loops in document order, serial, no vector directive", _naive)
SERIAL = Variant("serial", "the example's schedule without `parallel`", _serial)
NOVEC = Variant("novec", "the example's schedule without `vectorize`", _novec)
SHARED_VARIANTS = tuple(v.name for v in (OWN, NAIVE, SERIAL, NOVEC))


@dataclass(frozen=True)
class Size:
    label: str  # where the data lives: "L2", "L3" or "DRAM"
    sizes: dict[str, int]


@dataclass(frozen=True)
class KernelSuite:
    kernel: str  # the example's file stem
    variants: tuple[Variant, ...]
    sizes: tuple[Size, ...]


def _sizes(label: str, **sizes: int) -> Size:
    return Size(label, dict(sizes))


SUITE: dict[str, KernelSuite] = {
    s.kernel: s
    for s in [
        KernelSuite(
            "gemm",
            (
                OWN,
                NAIVE,
                Variant(
                    "ikj",
                    "loops i, k, j: rows of C updated by rows of B, vectorized along j, rows to the cores",
                    _fixed({"C": "reorder i, k, j; parallel i; vectorize j by 8"}),
                ),
                SERIAL,
            ),
            (
                # N spans two of the schedule's 512-column blocks, so that both cores work
                _sizes("L2", M=64, N=1024, K=64),
                _sizes("L3", M=256, N=1024, K=512),
                # C alone is 64 MiB: a rank-16 update streams C through DRAM
                _sizes("DRAM", M=4096, N=4096, K=16),
            ),
        ),
        KernelSuite(
            "batch_matmul",
            (
                OWN,
                NAIVE,
                Variant(
                    "bikj",
                    "loops b, i, k, j: no blocking or packing, vectorized along j, batches to the cores",
                    _fixed({"C": "reorder b, i, k, j; parallel b; vectorize j by 8"}),
                ),
                SERIAL,
            ),
            (
                _sizes("L2", NB=4, M=64, N=64, K=64),
                _sizes("L3", NB=16, M=128, N=128, K=128),
                _sizes("DRAM", NB=96, M=256, N=256, K=64),
            ),
        ),
        KernelSuite(
            "conv2d",
            (
                OWN,
                NAIVE,
                Variant(
                    "direct",
                    "loops n, f, y, c, r, s, x: no register blocking or packing, vectorized along x, "
                    "output channels to the cores",
                    _fixed({"O": "reorder n, f, y, c, r, s, x; parallel f; vectorize x by 8"}),
                ),
                SERIAL,
            ),
            (
                _sizes("L2", N=1, C=16, F=16, H=28, W=28),
                _sizes("L3", N=1, C=32, F=32, H=112, W=112),
                _sizes("DRAM", N=1, C=16, F=16, H=576, W=576),
            ),
        ),
        KernelSuite(
            "blur",
            (
                OWN,
                NAIVE,
                Variant(
                    "unfused",
                    "both passes over whole rows, bx computed in full first; rows to the cores, vectorized",
                    _fixed(
                        {
                            "out": "parallel y; vectorize x by 16",
                            "bx": "compute_root; parallel y; vectorize x by 16",
                        }
                    ),
                ),
                SERIAL,
            ),
            (
                _sizes("L2", H=256, W=256),
                _sizes("L3", H=1024, W=1024),
                _sizes("DRAM", H=4096, W=4096),
            ),
        ),
        KernelSuite(
            "elementwise",
            (
                OWN,
                NAIVE,
                Variant(
                    "unfused",
                    "each stage in full over the whole array (temporaries through memory); rows to the cores",
                    _fixed(
                        {
                            "out": "parallel i; vectorize j by 16",
                            "t2": "compute_root; parallel i; vectorize j by 16",
                            "t1": "compute_root; parallel i; vectorize j by 16",
                        }
                    ),
                ),
                SERIAL,
            ),
            (
                _sizes("L2", M=32, N=1024),
                _sizes("L3", M=512, N=1024),
                _sizes("DRAM", M=2048, N=4096),
            ),
        ),
        KernelSuite(
            "rowsum",
            (
                OWN,
                NAIVE,
                NOVEC,
                SERIAL,
            ),
            (
                _sizes("L2", M=256, N=512),
                _sizes("L3", M=2048, N=1024),
                _sizes("DRAM", M=8192, N=2048),
            ),
        ),
        KernelSuite(
            "softmax",
            (
                OWN,
                NAIVE,
                NOVEC,
                SERIAL,
            ),
            (
                _sizes("L2", M=64, N=1024),
                _sizes("L3", M=1024, N=1024),
                _sizes("DRAM", M=8192, N=1024),
            ),
        ),
        KernelSuite(
            "layernorm",
            (
                OWN,
                NAIVE,
                NOVEC,
                SERIAL,
            ),
            (
                _sizes("L2", M=64, N=1024),
                _sizes("L3", M=1024, N=1024),
                _sizes("DRAM", M=8192, N=1024),
            ),
        ),
        KernelSuite(
            "syrk",
            (
                OWN,
                NAIVE,
                SERIAL,
            ),
            (
                _sizes("L2", N=128, K=128),
                _sizes("L3", N=512, K=256),
                _sizes("DRAM", N=2048, K=1024),
            ),
        ),
        KernelSuite(
            "trmm",
            (
                OWN,
                NAIVE,
                SERIAL,
            ),
            (
                _sizes("L2", M=128, N=128),
                _sizes("L3", M=512, N=256),
                _sizes("DRAM", M=2048, N=1280),
            ),
        ),
        KernelSuite(
            "jacobi_2d",
            (
                OWN,
                NAIVE,
                SERIAL,
            ),
            (
                _sizes("L2", T=20, N=256),
                _sizes("L3", T=10, N=1024),
                _sizes("DRAM", T=4, N=4096),
            ),
        ),
        KernelSuite(
            "causal_attention",
            (
                OWN,
                NAIVE,
                SERIAL,
            ),
            (
                _sizes("L2", S=256, D=64),
                _sizes("L3", S=1024, D=64),
                _sizes("DRAM", S=4096, D=64),
            ),
        ),
        KernelSuite(
            "seidel_2d",
            (
                OWN,
                NAIVE,
                Variant(
                    "split",
                    "rows in blocks of 64 (split j: the order is kept), no unroll",
                    _fixed({"A": "split j by 64 -> jo, ji"}),
                ),
            ),
            (
                _sizes("L2", T=4, N=128),
                _sizes("L3", T=2, N=1024),
                _sizes("DRAM", T=1, N=2100),
            ),
        ),
        KernelSuite(
            "cholesky",
            (
                OWN,
                NAIVE,
                Variant(
                    "split",
                    "the dot product in blocks of 8 (split k: the order is kept), unrolled by 2",
                    _fixed({"A": "split k by 8 -> ko, ki; unroll ki by 2"}),
                ),
            ),
            (
                _sizes("L2", N=96),
                _sizes("L3", N=1000),
                _sizes("DRAM", N=1600),
            ),
        ),
        KernelSuite(
            "transpose",
            (
                OWN,
                NAIVE,
                Variant(
                    "tile8",
                    "8 x 8 tiles (the example has 32 x 32; a tile row is half a cache line), rows of tiles to the cores",
                    _fixed({"B": "tile i, j by 8, 8 -> io, jo, ii, ji; parallel io; vectorize ji by 8"}),
                ),
                SERIAL,
            ),
            (
                _sizes("L2", M=256, N=256),
                _sizes("L3", M=1024, N=1024),
                _sizes("DRAM", M=4096, N=4096),
            ),
        ),
    ]
}

# --quick: two kernels, two schedules, tiny sizes (a smoke test of the command)
QUICK_KERNELS = ("gemm", "rowsum")
QUICK_VARIANTS = ("own", "naive")


# ---- cases --------------------------------------------------------------------


@dataclass
class Case:
    kernel: str
    variant: str
    size_label: str
    sizes: dict[str, int]
    document: Path  # the variant document
    example: Path  # the example it was made from
    description: str = ""


def example_path(kernel: str, examples: Path = EXAMPLES_DIR) -> Path:
    path = examples / f"{kernel}.design"
    if not path.is_file():
        raise DiagnosticError(
            [
                Diagnostic(
                    "error", f"example '{kernel}' not found: no {path} (irkit validate builds its suite from the example "
                    "documents; give their folder with --examples DIR)"
                )
            ]
        )
    return path


def variant_text(kernel: str, variant: Variant, examples: Path = EXAMPLES_DIR) -> str:
    """The example's text with the variant's schedules."""
    text = example_path(kernel, examples).read_text()
    schedules = variant.make(own_schedules(text))
    if schedules is None:
        return text
    return replace_schedules(text, schedules, f"irkit validate: variant '{variant.name}' -- {variant.description}")


def select(only: list[str] | None = None, quick: bool = False) -> list[KernelSuite]:
    """The kernels to validate (all, or those named), each with its variants and sizes for the mode."""
    names = list(QUICK_KERNELS) if quick and not only else list(only or SUITE)
    unknown = [n for n in names if n not in SUITE]
    if unknown:
        raise DiagnosticError(
            [Diagnostic("error", f"unknown kernel '{n}' (kernels: {', '.join(SUITE)})") for n in unknown]
        )
    out = []
    for name in names:
        s = SUITE[name]
        if quick:
            variants = tuple(v for v in s.variants if v.name in QUICK_VARIANTS)
            cached = s.sizes[0].sizes  # the cache-resident size, a quarter and a half of it in each dimension
            sizes = (Size("tiny", _shrink(cached, 4)), Size("small", _shrink(cached, 2)))
            s = KernelSuite(s.kernel, variants, sizes)
        out.append(s)
    return out


def _shrink(sizes: dict[str, int], by: int) -> dict[str, int]:
    return {k: max(1, v // by) for k, v in sizes.items()}


def write_variants(
    suites: list[KernelSuite], directory: Path, examples: Path = EXAMPLES_DIR
) -> dict[tuple[str, str], Path]:
    """Write each kernel's variant documents to `directory`; (kernel, variant) -> path."""
    paths = {}
    for s in suites:
        for v in s.variants:
            path = directory / f"{s.kernel}.{v.name}.design"
            path.write_text(variant_text(s.kernel, v, examples))
            paths[(s.kernel, v.name)] = path
    return paths


def cases(suites: list[KernelSuite], paths: dict[tuple[str, str], Path], examples: Path = EXAMPLES_DIR) -> list[Case]:
    """Kernel by kernel, size by size, schedule by schedule (the order they are measured in)."""
    return [
        Case(
            s.kernel,
            v.name,
            z.label,
            dict(z.sizes),
            paths[(s.kernel, v.name)],
            example_path(s.kernel, examples),
            v.description,
        )
        for s in suites
        for z in s.sizes
        for v in s.variants
    ]


@contextlib.contextmanager
def hardware_path(directory: Path) -> Iterator[None]:
    """Put `directory` first on `$IRKIT_HW_PATH` while variants written elsewhere are compiled.

    A variant document lives in a temporary directory, so its `hardware NAME`
    would no longer be found next to it; the example's directory is searched
    in its place (before the rest of `$IRKIT_HW_PATH` and the bundled profiles).
    """
    old = os.environ.get("IRKIT_HW_PATH")
    os.environ["IRKIT_HW_PATH"] = os.pathsep.join([str(directory)] + ([old] if old else []))
    try:
        yield
    finally:
        if old is None:
            del os.environ["IRKIT_HW_PATH"]
        else:
            os.environ["IRKIT_HW_PATH"] = old
