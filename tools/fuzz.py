"""A mutation fuzzer for irkit's front end and lowering: bad input must give diagnostics, never a crash.

    python -m tools.fuzz --count 20000 --seed 1             # frontend, checker, lowering, C emission
    python -m tools.fuzz --seconds 600 --build 200          # and build and run 200 accepted documents
    python -m tools.fuzz --count 2000 --json findings.json

Every seed document the project has (examples/, bench/documents/, the lit
goldens' documents, the bundled hardware files) is mutated a few tokens at a
time: tokens deleted, duplicated, swapped, replaced by a keyword, a name of
the document or an edge value (huge, negative, zero, digit groups, names C
or the IR refuse, very long names), a number replaced by an extreme one, a
name renamed everywhere.  Each mutant goes through the stages a user's
document goes through, and what happens is classified:

- `refused`: the frontend or checker reported diagnostics (the normal case);
- `accepted`: it passed the checker, lowered to loop IR and emitted C
  (and, with `--build`, compiled, ran at small sizes and matched the oracle);
- `crash`: any exception other than a `DiagnosticError` in any stage, or a
  `DiagnosticError` without a diagnostic: a bug;
- `refused_late`: the checker accepted the document but a later stage
  refused it with a diagnostic -- the checker is not complete;
- `wrong`: a built kernel's outputs differ from the numpy oracle.

The test suite runs a bounded campaign (`tests/unit/test_fuzz_campaign.py`)
and asserts no crash; this module runs the larger ones.  Findings are
deduplicated by stage, exception type and the first words of the message,
and each keeps its smallest mutant, so a report is one screen per bug.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOKEN_RE = re.compile(r'#[^\n]*|"(?:[^"\\\n]|\\.)*"|->|[+\-*/%]?=|max=|==|[A-Za-z_][A-Za-z0-9_]*|\d[\d_]*(?:\.\d+)?(?:[eE][+-]?\d+)?|\S')

KEYWORDS = (
    "design doc sizes tensor input output temp f32 f64 i32 layout row_major col_major order align schedule split "
    "tile by reorder parallel vectorize unroll unroll_jam pack at compute_at compute_root hardware cache dram "
    "assume aligned noalias relaxed_math metric latency throughput max min exp sqrt matmul batch_matmul conv2d "
    "softmax transpose stride padding axis layout nchw nhwc"
).split()
EDGE_VALUES = [
    "0", "-1", "1", "2", "3", "7", "64", "1_000", "1__0", "1_", "2.5", "1e999", "-0", "65536", "2147483648",
    "9223372036854775807", "9223372036854775808", "-9223372036854775808", "99999999999999999999",
    "9" * 50,
]
PLAUSIBLE_VALUES = ["1", "2", "3", "4", "5", "8", "16", "32", "64", "128", "256", "6", "12"]
EDGE_NAMES = [
    "_6", "_x", "x_1", "int", "for", "free", "exp", "sqrt", "NAN", "INFINITY", "irkit_x", "main", "N", "M", "K",
    "i", "j", "k", "io", "ii", "A", "B", "C", "x" * 70, "y" * 300, "design", "tile", "align",
]
PUNCTUATION = list("{}[](),;:=+-*/%.") + ["->", "+=", "max=", "=="]


# ---------------------------------------------------------------- seeds


def seed_documents() -> list[str]:
    """Every design document and hardware file of the project, `# -----` chunks split apart."""
    paths = [
        *sorted((ROOT / "examples").glob("*.design")),
        *sorted((ROOT / "bench" / "documents").glob("*.design")),
        *sorted((ROOT / "examples" / "tutorial").rglob("*.design")),
        # not lit's Output/ folders: a lit run writes and removes documents there while this reads
        *sorted(p for p in (ROOT / "tests" / "filecheck").rglob("*.design") if "Output" not in p.parts),
        *sorted((ROOT / "irkit" / "hw").glob("*.hw")),
    ]
    docs: list[str] = []
    for path in paths:
        for chunk in re.split(r"^\s*# -----\s*$", path.read_text(), flags=re.MULTILINE):
            if "{" in chunk:
                docs.append(chunk)
    return docs


def tokenize(text: str) -> list[str]:
    return TOKEN_RE.findall(text)


def untokenize(tokens: list[str]) -> str:
    return " ".join(t + "\n" if t.startswith("#") else t for t in tokens)


# ---------------------------------------------------------------- mutation


def mutate(tokens: list[str], rng: random.Random) -> list[str]:
    """`tokens` with one to four mutations."""
    tokens = list(tokens)
    names = sorted({t for t in tokens if re.fullmatch(r"[A-Za-z_]\w*", t)}) or ["x"]
    for _ in range(rng.choice((1, 1, 1, 2, 2, 3, 4))):
        if not tokens:
            break
        i = rng.randrange(len(tokens))
        kind = rng.choice(
            ["delete", "duplicate", "swap", "swap_near", "keyword", "name", "edge_value", "edge_name", "punct"]
            + ["number"] * 4
            + ["rename"] * 2
        )
        if kind == "delete":
            del tokens[i]
        elif kind == "duplicate":
            tokens.insert(i, tokens[i])
        elif kind == "swap":
            j = rng.randrange(len(tokens))
            tokens[i], tokens[j] = tokens[j], tokens[i]
        elif kind == "swap_near" and i + 1 < len(tokens):
            tokens[i], tokens[i + 1] = tokens[i + 1], tokens[i]
        elif kind == "keyword":
            tokens.insert(i, rng.choice(KEYWORDS)) if rng.random() < 0.5 else tokens.__setitem__(i, rng.choice(KEYWORDS))
        elif kind == "name":
            tokens[i] = rng.choice(names)
        elif kind == "edge_value":
            tokens[i] = rng.choice(EDGE_VALUES)
        elif kind == "edge_name":
            tokens[i] = rng.choice(EDGE_NAMES)
        elif kind == "punct":
            tokens.insert(i, rng.choice(PUNCTUATION))
        elif kind == "number":
            numbers = [k for k, t in enumerate(tokens) if t[:1].isdigit()]
            if numbers:
                plausible = rng.random() < 0.7
                tokens[rng.choice(numbers)] = rng.choice(PLAUSIBLE_VALUES if plausible else EDGE_VALUES)
        elif kind == "rename":
            old, new = rng.choice(names), rng.choice(EDGE_NAMES + names)
            tokens = [new if t == old else t for t in tokens]
    return tokens


def mutants(count: int | None, seconds: float | None, seed: int) -> Iterator[str]:
    """Mutants of the seed documents, `count` of them or for `seconds` (whichever ends first)."""
    rng = random.Random(seed)
    valid, invalid = [], []
    for doc in seed_documents():
        (valid if _accepted(doc) else invalid).append(tokenize(doc))
    deadline = None if seconds is None else time.monotonic() + seconds
    made = 0
    while (count is None or made < count) and (deadline is None or time.monotonic() < deadline):
        made += 1
        # Mostly mutants of documents that check: one edit from valid reaches the deep stages.
        pool = valid if valid and (rng.random() < 0.85 or not invalid) else invalid
        yield untokenize(mutate(rng.choice(pool), rng))


def _accepted(text: str) -> bool:
    from irkit.frontend import parse_design

    try:
        parse_design(text, "seed.design")
    except Exception:
        return False
    return True


# ---------------------------------------------------------------- stages


@dataclass
class Finding:
    kind: str  # crash, refused_late, wrong
    stage: str
    summary: str
    document: str
    detail: str = ""
    count: int = 1


@dataclass
class Campaign:
    counts: dict[str, int] = field(default_factory=dict)
    findings: dict[tuple[str, str, str], Finding] = field(default_factory=dict)
    built: int = 0

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def add(self, outcome: str) -> None:
        self.counts[outcome] = self.counts.get(outcome, 0) + 1

    def record(self, kind: str, stage: str, exc: BaseException | str, document: str) -> None:
        self.add(kind)
        text = exc if isinstance(exc, str) else f"{type(exc).__name__}: {exc}"
        summary = _summary(text)
        key = (kind, stage, summary)
        detail = "" if isinstance(exc, str) else "".join(traceback.format_exception(exc)[-6:])
        old = self.findings.get(key)
        if old is None:
            self.findings[key] = Finding(kind, stage, summary, document, detail)
            return
        old.count += 1
        if len(document) < len(old.document):
            old.document, old.detail = document, detail

    def rate(self, kind: str) -> float:
        return self.counts.get(kind, 0) / max(1, self.total)


def _summary(text: str) -> str:
    """The message with its specifics (names, numbers, quoted text) blurred, for deduplication."""
    first = text.strip().splitlines()[0] if text.strip() else text
    first = re.sub(r"'[^']*'", "'_'", first)
    first = re.sub(r"\d+", "N", first)
    return first[:120]


def _diagnostic_error():
    from irkit.diagnostics import DiagnosticError

    return DiagnosticError


def run_one(text: str, campaign: Campaign, build: bool) -> None:
    """Take one document through the stages; record what happened."""
    DiagnosticError = _diagnostic_error()
    from irkit.frontend import parse_design

    try:
        module = parse_design(text, "fuzz.design")
    except DiagnosticError as exc:
        if not exc.diagnostics:
            campaign.record("crash", "frontend", "DiagnosticError without a diagnostic", text)
        else:
            campaign.add("refused")
        return
    except RecursionError as exc:  # noqa: B014 -- named for the report
        campaign.record("crash", "frontend", exc, text)
        return
    except Exception as exc:
        campaign.record("crash", "frontend", exc, text)
        return
    from irkit.dialects import design as d

    if not any(isinstance(op, d.DesignOp) for op in module.body.block.ops):
        campaign.add("accepted")  # a hardware file: nothing to lower
        return
    stage = "lowering"
    try:
        from irkit.api import lower
        from irkit.backends.c import emit_c

        levels = lower(module)
        stage = "C emission"
        source = emit_c(levels["loop"])
    except DiagnosticError as exc:
        campaign.record("refused_late", stage, exc.diagnostics[0].message if exc.diagnostics else str(exc), text)
        return
    except Exception as exc:
        campaign.record("crash", stage, exc, text)
        return
    if not build:
        campaign.add("accepted")
        return
    _build_and_run(text, module, source, campaign)


def _small_sizes(module) -> dict[str, int] | None:
    """Sizes between 1 and 9 that keep the document's assumptions and leave no tensor empty."""
    from irkit.dialects import design as d
    from irkit.sizes import SizeError, document_sizes

    design = next(op for op in module.body.block.ops if isinstance(op, d.DesignOp))
    names = [op.sym_name.data for op in design.body.block.ops if isinstance(op, d.SizeOp)]
    divisors = {op.size.data: op.divisor.value.data for op in design.body.block.ops if isinstance(op, d.AssumeDivisibleOp)}
    for base in (5, 9, 7, 16):
        sizes = {n: max(base // max(divisors.get(n, 1), 1), 1) * max(divisors.get(n, 1), 1) for n in names}
        try:
            return document_sizes(module, sizes)
        except SizeError:
            continue
    return None


def _build_and_run(text: str, module, source: str, campaign: Campaign) -> None:
    DiagnosticError = _diagnostic_error()
    import irkit
    from irkit.reference import compare, reduction_lengths

    sizes = _small_sizes(module)
    if sizes is None:
        campaign.add("accepted")
        return
    stage = "build"
    try:
        kernel = irkit.compile(text, sizes=sizes)
        campaign.built += 1
        stage = "run"
        inputs = kernel.random_inputs()
        outputs = kernel(**inputs)
        stage = "oracle"
        expected = kernel.reference(inputs)
        lengths = reduction_lengths(kernel.levels["design"], kernel.resolve_sizes())
        for name, arr in outputs.items():
            if not compare(arr, expected[name], arr.dtype, lengths.get(name, 1)).ok:
                campaign.record("wrong", "run", f"output '{name}' differs from the oracle", text)
                return
    except DiagnosticError as exc:
        from irkit.backends.build import GeneratedCodeError

        kind = "crash" if isinstance(exc, GeneratedCodeError) else "refused_late"
        campaign.record(kind, stage, exc.diagnostics[0].message if exc.diagnostics else str(exc), text)
        return
    except Exception as exc:
        campaign.record("crash", stage, exc, text)
        return
    campaign.add("accepted")


def run_campaign(count: int | None = 1000, seconds: float | None = None, seed: int = 0, build: int = 0) -> Campaign:
    """Fuzz `count` mutants (or for `seconds`); the first `build` accepted ones are also built and run."""
    campaign = Campaign()
    for text in mutants(count, seconds, seed):
        run_one(text, campaign, build=campaign.built < build)
    return campaign


# ---------------------------------------------------------------- report


def report(campaign: Campaign, seconds: float) -> str:
    counts = ", ".join(f"{k} {v}" for k, v in sorted(campaign.counts.items()))
    lines = [
        f"{campaign.total} mutants in {seconds:.0f} s: {counts}; {campaign.built} built and run",
        f"crash rate {campaign.rate('crash'):.3%}; refused after the checker accepted: {campaign.rate('refused_late'):.3%}",
    ]
    for finding in sorted(campaign.findings.values(), key=lambda f: (f.kind != "crash", -f.count)):
        lines += ["", f"[{finding.kind}] {finding.stage}: {finding.summary}  (x{finding.count})", "  " + finding.document[:600].replace("\n", "\n  ")]
        if finding.detail:
            lines.append("  " + finding.detail.strip().replace("\n", "\n  "))
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.fuzz", description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=None, help="number of mutants (default: 5000 unless --seconds)")
    parser.add_argument("--seconds", type=float, default=None, help="fuzz for this long")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--build", type=int, default=0, metavar="N", help="build, run and check the first N accepted documents")
    parser.add_argument("--json", metavar="FILE", help="write the findings as JSON")
    args = parser.parse_args(argv)
    count = args.count if args.count is not None or args.seconds is not None else 5000
    start = time.monotonic()
    campaign = run_campaign(count, args.seconds, args.seed, args.build)
    elapsed = time.monotonic() - start
    sys.stdout.write(report(campaign, elapsed))
    if args.json:
        payload = {
            "counts": campaign.counts,
            "built": campaign.built,
            "seconds": elapsed,
            "findings": [vars(f) for f in campaign.findings.values()],
        }
        Path(args.json).write_text(json.dumps(payload, indent=2) + "\n")
    return 1 if campaign.counts.get("crash") or campaign.counts.get("wrong") else 0


if __name__ == "__main__":
    sys.exit(main())
