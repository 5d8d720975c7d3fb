"""`irkit.validate.suite`: every variant document it generates is a valid design, with the schedule it says."""

import os
from pathlib import Path

import pytest

from irkit.diagnostics import DiagnosticError
from irkit.frontend import parse_design
from irkit.metrics import work
from irkit.validate import suite

L2_BYTES = 1 << 20  # this project's hosts: 1 MiB of L2 per core
L3_BYTES = 32 << 20

VARIANTS = [(k.kernel, v) for k in suite.select() for v in k.variants]


@pytest.mark.parametrize(("kernel", "variant"), VARIANTS, ids=[f"{k}-{v.name}" for k, v in VARIANTS])
def test_variant_passes_the_checker(kernel, variant):
    example = suite.example_path(kernel)
    text = suite.variant_text(kernel, variant)
    parse_design(text, str(example), check=True)  # raises DiagnosticError on any problem
    schedules = suite.own_schedules(text)
    if variant.name == "own":
        assert text == example.read_text()
    elif variant.name == "naive":
        assert schedules == {}
    elif variant.name == "serial":
        assert schedules and not any(d.startswith("parallel") for ds in schedules.values() for d in ds)
    elif variant.name == "novec":
        assert schedules and not any(d.startswith("vectorize") for ds in schedules.values() for d in ds)
    if variant.name != "own":
        assert schedules != suite.own_schedules(example.read_text())
    assert strip_schedules(text) == strip_schedules(example.read_text())  # nothing else changed


def strip_schedules(text: str) -> list[str]:
    """The document's lines outside schedule blocks, comments and blank lines dropped."""
    text = suite.replace_schedules(text, {})
    return [ln.split("#", 1)[0].rstrip() for ln in text.splitlines() if ln.split("#", 1)[0].strip()]


@pytest.mark.parametrize("kernel", list(suite.SUITE))
def test_sizes_span_cache_to_dram(kernel):
    s = suite.SUITE[kernel]
    assert len(s.variants) >= 3 and {"own", "naive"} <= {v.name for v in s.variants}
    assert len({v.name for v in s.variants}) == len(s.variants)
    example = suite.example_path(kernel)
    module = parse_design(example.read_text(), str(example))
    data = {z.label: work(module, z.sizes).bytes for z in s.sizes}
    assert data["L2"] <= L2_BYTES, data
    whole = {z.label: footprint(module, z.sizes) for z in s.sizes}  # temporaries too (attention's scores)
    assert max(data["DRAM"], whole["DRAM"]) > L3_BYTES, (data, whole)


def footprint(module, sizes: dict[str, int]) -> int:
    """Bytes of every tensor of the document, temporaries included, at `sizes`."""
    from math import prod

    from irkit.affine_text import evaluate, parse_affine
    from irkit.dialects import design as d

    tensors = [op for op in module.walk() if isinstance(op, d.TensorOp)]
    item = {"f32": 4, "f64": 8, "i32": 4}
    return sum(prod(evaluate(parse_affine(e), sizes) for e in t.shape_exprs) * item[t.dtype.data] for t in tensors)


def test_every_example_is_in_the_suite():
    assert {p.stem for p in suite.EXAMPLES_DIR.glob("*.design")} == set(suite.SUITE)


def test_replace_schedules_keeps_the_rest():
    text = """design d {
  sizes { N = 8 }
  tensor x : f32[N] input
  tensor y : f32[N] output
  y[i] = x[i] * 2
  # the schedule, with a } in a comment
  schedule y { split i by 4; parallel io }   # trailing
  metric latency
}
"""
    (block,) = suite.schedule_blocks(text)
    assert block.stage == "y" and suite.directives(block.body) == ["split i by 4", "parallel io"]
    naive = suite.replace_schedules(text, {})
    assert "schedule" not in naive and "the schedule" not in naive and "metric latency" in naive
    other = suite.replace_schedules(text, {"y": ["vectorize i by 8"]}, "vectorized")
    assert suite.own_schedules(other) == {"y": ["vectorize i by 8"]}
    assert "# vectorized" in other
    parse_design(other)
    # a document without schedules gets them before its closing brace
    again = suite.replace_schedules(naive, {"y": ["parallel i"]})
    assert suite.own_schedules(again) == {"y": ["parallel i"]}
    parse_design(again)


def test_select_and_quick():
    assert [k.kernel for k in suite.select()] == list(suite.SUITE)
    quick = suite.select(quick=True)
    assert [k.kernel for k in quick] == list(suite.QUICK_KERNELS)
    assert all([v.name for v in k.variants] == ["own", "naive"] and len(k.sizes) == 2 for k in quick)
    assert [k.kernel for k in suite.select(["blur"], quick=True)] == ["blur"]
    with pytest.raises(DiagnosticError, match="unknown kernel 'nope'"):
        suite.select(["nope"])


def test_written_variants_resolve_their_hardware(tmp_path, monkeypatch):
    monkeypatch.delenv("IRKIT_HW_PATH", raising=False)
    (tmp_path / "examples").mkdir()
    # gemm referring to a description next to it, as `hardware here`
    (tmp_path / "examples" / "gemm.design").write_text(_with_named_hardware(suite.example_path("gemm").read_text()))
    (tmp_path / "examples" / "here.hw").write_text(
        "hardware here {\n cores 2\n simd 256 bits\n frequency 2 GHz\n"
        " cache L1 { size 32 KiB; line 64 B; bandwidth 100 GB/s }\n dram { bandwidth 10 GB/s }\n}\n"
    )
    out = tmp_path / "variants"
    out.mkdir()
    kernels = [suite.KernelSuite("gemm", (suite.OWN, suite.NAIVE), suite.SUITE["gemm"].sizes)]
    paths = suite.write_variants(kernels, out, tmp_path / "examples")
    with pytest.raises(DiagnosticError, match="hardware description 'here' not found"):
        parse_design(paths[("gemm", "naive")].read_text(), str(paths[("gemm", "naive")]))
    with suite.hardware_path(tmp_path / "examples"):
        for path in paths.values():
            parse_design(path.read_text(), str(path))
    assert "IRKIT_HW_PATH" not in os.environ


def _with_named_hardware(text: str) -> str:
    start = text.index("  hardware host {")
    end = text.index("  }\n", text.index("dram {", start)) + len("  }\n")
    return text[:start] + "  hardware here\n" + text[end:]


def test_cases_order_and_paths(tmp_path):
    kernels = suite.select(["rowsum"])
    paths = suite.write_variants(kernels, tmp_path)
    cases = suite.cases(kernels, paths)
    assert len(cases) == len(kernels[0].variants) * len(kernels[0].sizes)
    assert [c.size_label for c in cases[: len(kernels[0].variants)]] == ["L2"] * len(kernels[0].variants)
    assert all(Path(c.document).parent == tmp_path and c.example == suite.example_path("rowsum") for c in cases)
