"""One check the tuner's tests share: a document's compiled kernel agrees with the numpy oracle."""

from __future__ import annotations

import numpy as np

import irkit
from irkit.oracle import compare, reduction_lengths


def agrees_with_the_oracle(text: str, sizes: dict[str, int], seed: int = 3, name: str = "tuned.design") -> None:
    """Compile `text`, run it at `sizes` on seeded random inputs, and assert every output is within tolerance."""
    kernel = irkit.compile(text, name=name)
    inputs = kernel.random_inputs(sizes, seed=seed)
    with np.errstate(all="ignore"):
        got = kernel(sizes, **inputs)
        expected = kernel.reference(inputs, sizes)
    lengths = reduction_lengths(kernel.levels["design"], kernel.resolve_sizes(sizes))
    for out, value in expected.items():
        report = compare(got[out], value, value.dtype, lengths.get(out, 1))
        assert report.ok, f"{out} at {sizes}: {report}\n{text}"


def example_text(name: str, scheduled: bool = True) -> str:
    """examples/NAME.design, with its schedules or without any (the loops in document order)."""
    import re
    from pathlib import Path

    text = (Path(__file__).parents[2] / "examples" / f"{name}.design").read_text()
    return text if scheduled else re.sub(r"  schedule \w+ \{.*?\n  \}\n", "", text, flags=re.S)


def raised_document(text: str, name: str = "raised.design") -> str:
    """`text` lowered to loops, raised back to a tensorop kernel and printed as a document."""
    from irkit.backends.design_text import print_design
    from irkit.frontend import parse_design
    from irkit.raising.to_design import raise_module
    from irkit.raising.to_tensorop import raise_kernel
    from irkit.raising.verify import lowered_loops

    loops = lowered_loops(parse_design(text, name))
    kernel = next(iter(loops.body.block.ops))
    loops.body.block.insert_op_before(raise_kernel(kernel), kernel)
    loops.body.block.detach_op(kernel)
    return print_design(raise_module(loops))


def semantic_check_agrees(text: str, engine: str, tmp_path) -> str:
    """`irkit-opt --check-semantics` through the lowering and the schedule; its notes (asserts it agreed)."""
    import contextlib
    import io

    from irkit.tools.opt import main

    path = tmp_path / "checked.design"
    path.write_text(text)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main([str(path), "-p", "lower-design,lower-tensorop,apply-schedule", "--check-semantics",
                     "--check-semantics-engine", engine, "-o", str(tmp_path / "out.mlir")])  # fmt: skip
    assert code == 0 and "results agree after passes" in err.getvalue(), err.getvalue()
    return err.getvalue()


def builds_clean_and_runs_asan_clean(texts: list[str], runs: list[tuple[str, dict[str, int]]]) -> list[str]:
    """Every text builds under -Wall -Wextra -Werror; each run's harness passes AddressSanitizer.
    Returns the harnesses' outputs."""
    from irkit.backends.harness import ASAN_FLAGS, run_harness
    from tests.unit.test_c_vector import WERROR, asan_or_skip, loop_ir

    for text in texts:
        irkit.compile(text, name="clean.design", cflags=WERROR)
    asan_or_skip()
    flags = [*ASAN_FLAGS, "-O3", "-march=native", "-fno-math-errno", "-DIRKIT_NT_MIN_BYTES=0"]
    outputs = []
    for text, sizes in runs:
        result = run_harness(loop_ir(text), None, sizes, flags)
        assert result.returncode == 0, result.stderr[-3000:]
        outputs.append(result.stdout)
    return outputs


def irkit_says(text: str, tmp_path, command: str = "check") -> tuple[int, str, str]:
    """`irkit COMMAND` on `text` as a file: (exit status, stderr, the file's path); never a traceback."""
    import contextlib
    import io

    from irkit.tools.cli import main

    path = tmp_path / "doc.design"
    path.write_text(text)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        status = main([command, str(path)])
    assert "Traceback" not in err.getvalue(), err.getvalue()
    return status, err.getvalue(), str(path)
