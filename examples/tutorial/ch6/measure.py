"""Predict and measure a document's kernel before and after `tutorial-interchange`.

    python examples/tutorial/ch6/measure.py examples/tutorial/ch6/matmul_jki.design
    python examples/tutorial/ch6/measure.py DOC.design --size M=256 --repeat 5 --hw generic

Both versions are lowered to loop IR (lower-design, lower-tensorop,
apply-schedule), priced with the cost model, compiled to C with irkit's
default flags, run on the same random inputs and timed (best of --repeat
calls); the outputs must be bit-identical.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from interchange import LoopInterchangePass, predicted_seconds  # noqa: E402

from irkit.api import lower  # noqa: E402
from irkit.backends.runner import CompiledKernel  # noqa: E402
from irkit.context import make_context  # noqa: E402
from irkit.frontend import parse_design  # noqa: E402
from irkit.kernel_abi import find_kernels, kernel_args  # noqa: E402
from irkit.perf.hardware import load_hardware  # noqa: E402


def loop_levels(path: str, hardware: str, sizes: dict[str, int]):
    """(loop IR as lowered, loop IR after the pass) of a document."""
    before = lower(parse_design(Path(path).read_text(), path))["loop"]
    after = before.clone()
    spec = ",".join(f"{k}={v}" for k, v in sizes.items())
    LoopInterchangePass(hardware=hardware, sizes=spec).apply(make_context(), after)
    after.verify()
    return before, after


def run(module, sizes: dict[str, int], repeat: int) -> tuple[dict[str, np.ndarray], float]:
    """The outputs on seeded random inputs, and the best time of `repeat` calls."""
    kernel = CompiledKernel.build(module)
    rng = np.random.default_rng(0)
    arrays = {}
    for t in kernel.tensor_args:
        arr = kernel.empty(t.name, sizes)
        arr[...] = rng.standard_normal(arr.shape) if t.role == "input" else np.nan
        arrays[t.name] = arr
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        kernel(arrays, sizes)
        best = min(best, time.perf_counter() - start)
    outputs = {t.name: arrays[t.name].copy() for t in kernel.tensor_args if t.role == "output"}
    return outputs, best


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("file")
    p.add_argument("--hw", default="generic", help="hardware to price on (default: generic)")
    p.add_argument("--size", action="append", default=[], metavar="NAME=VALUE")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args(argv)
    given = {k: int(v) for k, v in (s.split("=") for s in args.size)}
    before, after = loop_levels(args.file, args.hw, given)
    kernel = find_kernels(before)[0]
    sizes = {s.name: s.default for s in kernel_args(kernel)[0]} | given
    hw = load_hardware(args.hw)
    print("sizes:", ", ".join(f"{k}={v}" for k, v in sizes.items()))
    outs = {}
    for label, module in (("before", before), ("after", after)):
        k = find_kernels(module)[0]
        order = [op.loop_name.data for op in k.walk() if hasattr(op, "loop_name")]
        predicted = predicted_seconds(k, sizes, hw)
        outs[label], measured = run(module, sizes, args.repeat)
        print(f"{label:>6}: loops {' '.join(order)}: predicted {predicted:.3g} s, measured {measured:.3g} s")
    same = all(np.array_equal(outs["before"][n], outs["after"][n], equal_nan=True) for n in outs["before"])
    print("outputs bit-identical:", "yes" if same else "NO")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
