"""A mutation catalogue for reverse verification: corrupted and legally edited loop IR.

    python -m tools.loop_mutants                   # 10 mutants of each kind per example
    python -m tools.loop_mutants --per-kind 40 --seed 3 --only gemm,softmax
    python -m tools.loop_mutants --json report.json

For every example the loop IR irkit generates is corrupted in the ways a
lowering pass or a person editing the loops gets wrong, one edit per mutant:

- `drop-min-clause`: an upper bound `min(a, b, ...)` loses one result (a tail's size clause);
- `off-by-one`: a constant of a loop bound moves by one;
- `small-buffer`: a constant extent of a temporary shrinks by one;
- `swap-nests`: a loop nest and the sibling nest right after it change places;
- `parallel`: `parallel` marked on a loop that has none;
- `window`: a window width `(d + F)` of a bound becomes F / 2, F - 1 or F + 1.

Each mutant runs in the loop interpreter at two small size sets that send
kernels through their tails, next to the original: it *changes the results*
when an output differs or an access goes out of bounds.  Then `irkit verify
--loops` judges it (`compare_modules`).  A result-changing mutant that
verification passes is a miss, the worst kind of finding.  Legal edits --
two independent loads swapped, a commutative operation's operands the other
way round -- must pass: one reported is a false alarm.

The report counts, per kind: mutants, result-changing ones, caught, caught
among the result-changing, located on a line of the document, caught only
by a "cannot raise" message; and then every miss and false alarm.  The test
suite runs a bounded campaign (`tests/unit/test_loop_mutants.py`).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from xdsl.parser import Parser

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"

# Two size sets per example: no multiple of a tile, a vector width or a register block.
SIZES: dict[str, list[dict[str, int]]] = {
    "gemm": [{"M": 7, "N": 19, "K": 5}, {"M": 13, "N": 35, "K": 9}],
    "batch_matmul": [{"NB": 2, "M": 7, "N": 19, "K": 5}, {"NB": 1, "M": 13, "N": 33, "K": 9}],
    "conv2d": [{"N": 1, "C": 3, "F": 5, "H": 6, "W": 7}, {"N": 1, "C": 2, "F": 9, "H": 5, "W": 11}],
    "blur": [{"H": 7, "W": 19}, {"H": 35, "W": 9}],
    "rowsum": [{"M": 7, "N": 19}, {"M": 35, "N": 5}],
    "softmax": [{"M": 7, "N": 19}, {"M": 17, "N": 5}],
    "transpose": [{"M": 7, "N": 19}, {"M": 35, "N": 5}],
    "elementwise": [{"M": 7, "N": 19}, {"M": 35, "N": 5}],
}

Mutant = tuple[str, str]  # (what was changed, the loop IR text)


# ---- mutation kinds ---------------------------------------------------------------------------

_UPPER = re.compile(r"to affine_map<\(([^)]*)\) -> \(([^<>]*)\)>\(([^)]*)\)")
_CONST_BOUND = re.compile(r"\+ (-?\d+)\)")
_LITERAL_BOUND = re.compile(r"affine_map<\(\) -> \((\d+)\)>\(\)")
_WINDOW = re.compile(r"\(d(\d) \+ (\d+)\)")
_ALLOC = re.compile(r"loop\.alloc\(\) \{tensor_name = \"\w+\", shape = affine_map<\(\) -> \(([^)]*)\)>")
_MARKS = re.compile(r'\{loop_name = "(\w+)", stage = "\w+"')
_LOAD = re.compile(r"^\s*(%\S+) = loop\.load (%\S+)\[")
_COMMUTATIVE = re.compile(r"^(\s*%\S+ = arith\.(?:addf|mulf|maximumf|minimumf) )(%\S+), (%\S+)( : \S+)$")


def _top_level_parts(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return parts + [cur.strip()]


def drop_min_clause(text: str) -> list[Mutant]:
    out = []
    for m in _UPPER.finditer(text):
        parts = _top_level_parts(m.group(2))
        for k in range(len(parts) if len(parts) > 1 else 0):
            rest = ", ".join(p for j, p in enumerate(parts) if j != k)
            new = f"to affine_map<({m.group(1)}) -> ({rest})>({m.group(3)})"
            out.append((f"drop '{parts[k]}' at {m.start()}", text[: m.start()] + new + text[m.end() :]))
    return out


def off_by_one(text: str) -> list[Mutant]:
    out = []
    lines = text.splitlines()
    for n, line in enumerate(lines):
        if "loop.for" not in line:
            continue
        head, rest = line.split("{loop_name")[0], line[len(line.split("{loop_name")[0]) :]
        for pattern, form in ((_CONST_BOUND, "+ {})"), (_LITERAL_BOUND, "affine_map<() -> ({})>()")):
            for m in pattern.finditer(head):
                for d in (1, -1):
                    value = int(m.group(1)) + d
                    edited = list(lines)
                    edited[n] = head[: m.start()] + form.format(value) + head[m.end() :] + rest
                    out.append((f"line {n + 1}: {m.group(1)} -> {value}", "\n".join(edited)))
    return out


def small_buffer(text: str) -> list[Mutant]:
    out = []
    for m in _ALLOC.finditer(text):
        dims = [d.strip() for d in m.group(1).split(",")]
        for k, d in enumerate(dims):
            if d.isdigit() and int(d) > 1:
                smaller = list(dims)
                smaller[k] = str(int(d) - 1)
                out.append((f"alloc at {m.start()}: dim {k} {d} -> {int(d) - 1}",
                            text[: m.start(1)] + ", ".join(smaller) + text[m.end(1) :]))  # fmt: skip
    return out


def nest_lines(lines: list[str], start: int) -> tuple[int, int]:
    """The lines [start, end) of the loop whose header is line `start` (by indentation)."""
    indent = len(lines[start]) - len(lines[start].lstrip())
    end = start + 1
    while not (lines[end].startswith(" " * indent + "}") and len(lines[end]) - len(lines[end].lstrip()) == indent):
        end += 1
    return start, end + 1


def swap_nests(text: str) -> list[Mutant]:
    lines = text.splitlines(keepends=True)
    out = []
    for i, line in enumerate(lines):
        if "loop.for" not in line:
            continue
        a = nest_lines(lines, i)
        j = a[1]
        if j >= len(lines) or "loop.for" not in lines[j] or lines[j][: len(line) - len(line.lstrip())].strip():
            continue
        if len(lines[j]) - len(lines[j].lstrip()) != len(line) - len(line.lstrip()):
            continue
        b = nest_lines(lines, j)
        swapped = lines[:i] + lines[b[0] : b[1]] + lines[a[0] : a[1]] + lines[b[1] :]
        out.append((f"swap the nests at lines {i + 1} and {j + 1}", "".join(swapped)))
    return out


def parallel(text: str) -> list[Mutant]:
    out = []
    for m in _MARKS.finditer(text):
        end = text.index("}", m.start())
        if "parallel" not in text[m.start() : end]:
            out.append((f"parallel {m.group(1)} at {m.start()}", text[:end] + ", parallel" + text[end:]))
    return out


def window(text: str) -> list[Mutant]:
    out = []
    for m in _WINDOW.finditer(text):
        f = int(m.group(2))
        for g in sorted({f // 2, f - 1, f + 1} - {f, 0}):
            out.append(
                (f"window {f} -> {g} at {m.start()}", text[: m.start()] + f"(d{m.group(1)} + {g})" + text[m.end() :])
            )
    return out


KINDS: dict[str, Callable[[str], list[Mutant]]] = {
    "drop-min-clause": drop_min_clause,
    "off-by-one": off_by_one,
    "small-buffer": small_buffer,
    "swap-nests": swap_nests,
    "parallel": parallel,
    "window": window,
}


def legal_edits(text: str) -> list[Mutant]:
    """Independent loads swapped; commutative operands the other way round."""
    lines = text.splitlines()
    out = []
    for i in range(len(lines) - 1):
        a, b = _LOAD.match(lines[i]), _LOAD.match(lines[i + 1])
        if a and b and a.group(1) not in lines[i + 1]:
            out.append(
                (f"swap the loads at line {i + 1}", "\n".join(lines[:i] + [lines[i + 1], lines[i]] + lines[i + 2 :]))
            )
    for i, line in enumerate(lines):
        m = _COMMUTATIVE.match(line)
        if m:
            edited = lines[:i] + [f"{m.group(1)}{m.group(3)}, {m.group(2)}{m.group(4)}"] + lines[i + 1 :]
            out.append((f"commute the operands at line {i + 1}", "\n".join(edited)))
    return out


# ---- running ---------------------------------------------------------------------------------


def _parse(text: str):
    from irkit.tools.opt import make_full_context

    return Parser(make_full_context(), text, "mutant.mlir").parse_module()


def _outputs(text: str, example: str) -> list[dict[str, np.ndarray]] | str:
    """The outputs at each size set, or why the kernel cannot run (out of bounds, ...)."""
    from irkit.oracle import random_inputs
    from irkit.oracle.loop_interp import run_loop_kernel

    runs = []
    for sizes in SIZES[example]:
        module = _parse(text)
        kernel = next(op for op in module.walk() if op.name == "func.func")
        try:
            runs.append(run_loop_kernel(module, random_inputs(kernel, sizes, seed=1), sizes))
        except Exception as exc:  # the interpreter's out of bounds, a freed buffer, ...
            return str(exc).splitlines()[0][:100]
    return runs


def _same(a, b) -> bool:
    if isinstance(a, str) or isinstance(b, str):
        return False
    return all(
        x[k].shape == y[k].shape and np.allclose(x[k], y[k], rtol=1e-4, atol=1e-5) for x, y in zip(a, b) for k in x
    )


@dataclass
class Report:
    counts: Counter = field(default_factory=Counter)
    misses: list[dict] = field(default_factory=list)
    false_alarms: list[dict] = field(default_factory=list)

    def table(self) -> str:
        rows = [
            f"{'kind':16} {'mutants':>7} {'changed':>7} {'caught':>6} {'caught|changed':>14} {'located':>7} {'cannot-raise':>12}"
        ]
        for kind in KINDS:
            c = [
                self.counts[(kind, x)] for x in ("n", "changed", "caught", "caught_changed", "located", "cannot_raise")
            ]
            rows.append(f"{kind:16} {c[0]:7} {c[1]:7} {c[2]:6} {c[3]:14} {c[4]:7} {c[5]:12}")
        total = {
            x: sum(self.counts[(k, x)] for k in KINDS) for x in ("n", "changed", "caught", "caught_changed", "located")
        }
        rows.append(
            f"{'all':16} {total['n']:7} {total['changed']:7} {total['caught']:6} {total['caught_changed']:14} {total['located']:7}"
        )
        rows.append(
            f"legal edits: {self.counts[('legal', 'n')]}, false alarms: {self.counts[('legal', 'false_alarm')]}"
        )
        return "\n".join(rows)


def campaign(examples: list[str], per_kind: int, seed: int, legal: int | None = None) -> Report:
    """Mutants of each kind (at most `per_kind`, drawn with `seed`) and legal edits of each example."""
    from irkit.frontend import parse_design
    from irkit.raising.verify import compare_modules, lowered_loops

    rng = random.Random(seed)
    report = Report()
    for example in examples:
        path = EXAMPLES / f"{example}.design"
        text = path.read_text()
        original = str(lowered_loops(parse_design(text, str(path))))
        reference = _outputs(original, example)
        assert not isinstance(reference, str), f"{example}: the generated loops do not run: {reference}"
        for kind, make in KINDS.items():
            mutants = make(original)
            rng.shuffle(mutants)
            for what, mutant in mutants[:per_kind]:
                try:
                    module = _parse(mutant)
                except Exception:
                    continue  # not well-formed IR: not a mutant of the loops
                runs = _outputs(mutant, example)
                changed = not _same(reference, runs)
                diags = compare_modules(parse_design(text, str(path)), module)
                located = any(d.line > 0 and Path(d.file).name == path.name for d in diags)
                c = report.counts
                c[(kind, "n")] += 1
                c[(kind, "changed")] += changed
                c[(kind, "caught")] += bool(diags)
                c[(kind, "caught_changed")] += bool(diags) and changed
                c[(kind, "located")] += located
                c[(kind, "cannot_raise")] += bool(diags) and all("cannot raise" in d.message for d in diags)
                if changed and not diags:
                    report.misses.append({"example": example, "kind": kind, "mutant": what,
                                          "effect": runs if isinstance(runs, str) else "different values"})  # fmt: skip
        edits = legal_edits(original)
        rng.shuffle(edits)
        for what, edited in edits[: 2 * per_kind if legal is None else legal]:
            diags = compare_modules(parse_design(text, str(path)), _parse(edited))
            report.counts[("legal", "n")] += 1
            report.counts[("legal", "false_alarm")] += bool(diags)
            if diags:
                report.false_alarms.append({"example": example, "edit": what, "message": diags[0].message})
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.loop_mutants", description=__doc__.splitlines()[0])
    parser.add_argument("--per-kind", type=int, default=10, help="mutants of each kind per example (default 10)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--only", default="", help="comma-separated examples (default: all eight)")
    parser.add_argument("--json", metavar="FILE", help="write the counts, misses and false alarms as JSON")
    args = parser.parse_args(argv)
    examples = [e for e in args.only.split(",") if e] or sorted(SIZES)
    unknown = [e for e in examples if e not in SIZES]
    if unknown:
        parser.error(f"no size sets for {', '.join(unknown)} (known: {', '.join(sorted(SIZES))})")
    report = campaign(examples, args.per_kind, args.seed)
    print(report.table())
    for miss in report.misses:
        print(f"missed: {miss['example']} {miss['kind']}: {miss['mutant']} ({miss['effect']})")
    for alarm in report.false_alarms:
        print(f"false alarm: {alarm['example']} {alarm['edit']}: {alarm['message'][:120]}")
    if args.json:
        counts = {f"{k}.{x}": v for (k, x), v in report.counts.items()}
        Path(args.json).write_text(json.dumps({"counts": counts, "misses": report.misses,
                                               "false_alarms": report.false_alarms}, indent=2))  # fmt: skip
    return 1 if report.misses or report.false_alarms else 0


if __name__ == "__main__":
    sys.exit(main())
