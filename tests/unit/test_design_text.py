"""The `.design` pretty-printer: canonical text that parses back to the same IR.

"Same IR" is the printed IR without locations (`str(module)`); the tests
also ask for structural equivalence, which compares float constants bit
for bit where the printed IR rounds them.
"""

from pathlib import Path

import pytest

import irkit.directives as dv
from irkit.backends.design_text import DesignPrintError, format_number, print_design
from irkit.dialects import design as d
from irkit.frontend import build_design, parse_design

ROOT = Path(__file__).parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.design"))
HW_FILES = sorted((ROOT / "irkit" / "hw").glob("*.hw"))


def build(text: str):
    module, diagnostics = build_design(text, "t.design")
    assert module is not None and not [x for x in diagnostics if x.severity == "error"], diagnostics
    return module


def assert_round_trip(text: str) -> str:
    """print(build(text)) builds to the same IR, and printing that again changes nothing."""
    first = build(text)
    printed = print_design(first)
    second = build(printed)
    assert str(second) == str(first), printed
    assert second.is_structurally_equivalent(first), printed
    assert print_design(second) == printed
    return printed


def stmt_text(doc_body: str) -> list[str]:
    """The printed statement lines of a document with `doc_body` inside `design t { }`."""
    printed = assert_round_trip(f"design t {{\n{doc_body}\n}}")
    return [line.strip() for line in printed.splitlines() if "[" in line and "tensor" not in line]


# --- the examples ------------------------------------------------------------------


def test_examples_exist():
    assert len(EXAMPLES) >= 8, EXAMPLES


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_round_trips_through_checked_parse(path):
    original = parse_design(path.read_text(), path.name)
    printed = print_design(original)
    again = parse_design(printed, path.name)
    assert str(again) == str(original)
    assert again.is_structurally_equivalent(original)
    assert print_design(again) == printed


@pytest.mark.parametrize("path", HW_FILES, ids=lambda p: p.name)
def test_hardware_file_round_trips(path):
    printed = assert_round_trip(path.read_text())
    assert printed.startswith(f"hardware {path.stem} {{\n")


# --- canonical form ------------------------------------------------------------------

CANONICAL = """\
design gemm {
  doc "C = A @ B"

  sizes { M = 1024, N = 512, K }

  tensor A : f32[M, K] input
  tensor B : f32[K, N] input
  tensor C : f32[M, N] output

  C[i, j] += A[i, k] * B[k, j]
  O = conv2d(I, W, stride = 1, padding = 1, layout = nchw)
  T = transpose(A, perm = [1, 0])

  layout {
    A : row_major align 64
    B : col_major
    C : order(1, 0)
    D : align 32
  }

  schedule C {
    tile i, j by 64, 256 -> io, jo, ii, ji
    split k by 128 -> ko, ki
    reorder io, jo, ko, ii, ki, ji
    parallel io
    vectorize ji by 16
    vectorize ki
    unroll ii by 4
  }
  schedule T {
    compute_at C.io
    compute_root
  }
  schedule O {}

  hardware host

  assume { M % 64 == 0; aligned(A, 64); noalias(A, B, C) }

  metric latency
}
"""


def test_canonical_text_prints_as_itself():
    assert print_design(build(CANONICAL)) == CANONICAL


def test_messy_text_prints_canonically():
    messy = """# leading comment
    design   gemm{doc "C = A @ B";sizes{M=1024;N=512,K,}
    tensor A:f32[M,K]input tensor B : f32[ K , N ] input  # comment
    tensor C : f32[(M), N] output ; ;
    C[ i,j ]+=(A[i,k])*B[k,j]
    O=conv2d(I,W,stride=1,padding=1,layout=nchw)   T = transpose(A, perm = [1,0])
    layout{A:row_major align 64;B:col_major} layout { C : order(1,0) D : align 32 }
    schedule C{tile i,j by 64,256->io,jo,ii,ji;split k by 128->ko,ki
      reorder io,jo,ko,ii,ki,ji;parallel io;vectorize ji by 16 vectorize ki;unroll ii by 4}
    schedule T { compute_at C . io ; compute_root } schedule O { ; }
    hardware host assume{M%64==0} assume { aligned(A,64) noalias(A,B,C) ; }
    metric latency}"""
    assert print_design(build(messy)) == CANONICAL


def test_runs_are_grouped_but_separated_sections_stay_apart():
    printed = assert_round_trip(
        "design t { sizes { M } tensor A : f32[M] input sizes { N } assume { M % 2 == 0 } metric latency"
        " assume { N % 4 == 0 } }"
    )
    assert printed.count("sizes {") == 2
    assert printed.count("assume {") == 2


def test_split_and_tile_print_the_default_loop_names():
    printed = assert_round_trip("design t { schedule C { split k by 4; tile i, j by 8, 8 } }")
    assert "split k by 4 -> ko, ki" in printed
    assert "tile i, j by 8, 8 -> io, jo, ii, ji" in printed


def test_named_op_parameters_keep_their_order_and_lists():
    (line,) = [
        x.strip()
        for x in assert_round_trip("design t { P = softmax(X, axis = -1) T = transpose(A, perm = []) }").splitlines()
        if "softmax" in x
    ]
    assert line == "P = softmax(X, axis = -1)"
    assert "T = transpose(A, perm = [])" in print_design(build("design t { T = transpose(A, perm = []) }"))


def test_affine_shapes_and_offsets_are_kept():
    printed = assert_round_trip(
        "design t { tensor A : f32[H+2, 2*W, (N+1)/2, N - (M - 1), -3 + N % 4] input A[y, x] = A[y + 1, x - -1] }"
    )
    assert "tensor A : f32[H + 2, 2 * W, (N + 1) / 2, N - (M - 1), -3 + N % 4] input" in printed
    assert "A[y, x] = A[y + 1, x - -1]" in printed


# --- expressions ---------------------------------------------------------------------

F32 = "tensor T : f32[N] output\n"
I32 = "tensor T : i32[N] output\n"


@pytest.mark.parametrize(
    "source, expected",
    [
        ("a[i] + b[i] + c[i]", "a[i] + b[i] + c[i]"),
        ("(a[i] + b[i]) + c[i]", "a[i] + b[i] + c[i]"),
        ("a[i] + (b[i] + c[i])", "a[i] + (b[i] + c[i])"),
        ("a[i] - (b[i] - c[i])", "a[i] - (b[i] - c[i])"),
        ("a[i] - (b[i] + c[i])", "a[i] - (b[i] + c[i])"),
        ("(a[i] - b[i]) - c[i]", "a[i] - b[i] - c[i]"),
        ("a[i] / (b[i] * c[i])", "a[i] / (b[i] * c[i])"),
        ("a[i] / (b[i] / c[i])", "a[i] / (b[i] / c[i])"),
        ("(a[i] / b[i]) * c[i]", "a[i] / b[i] * c[i]"),
        ("a[i] * (b[i] + c[i])", "a[i] * (b[i] + c[i])"),
        ("(a[i] + b[i]) * c[i]", "(a[i] + b[i]) * c[i]"),
        ("a[i] + b[i] * c[i]", "a[i] + b[i] * c[i]"),
        ("-a[i] * b[i]", "-a[i] * b[i]"),
        ("-(a[i] * b[i])", "-(a[i] * b[i])"),
        ("-(a[i] + b[i])", "-(a[i] + b[i])"),
        ("--a[i]", "- -a[i]"),
        ("-(-(3))", "- -3"),
        ("- 3", "-3"),
        ("a[i] - -3", "a[i] - -3"),
        ("a[i] * -(b[i] - 1)", "a[i] * -(b[i] - 1)"),
        ("((max((a[i]), min(b[i], 2))))", "max(a[i], min(b[i], 2))"),
        ("exp(-a[i]) / sqrt(a[i] * a[i] + 1)", "exp(-a[i]) / sqrt(a[i] * a[i] + 1)"),
    ],
)
def test_float_expressions_print_with_minimal_parentheses(source, expected):
    assert stmt_text(F32 + f"T[i] = {source}") == [f"T[i] = {expected}"]


@pytest.mark.parametrize(
    "source, expected",
    [
        ("-a[i]", "-a[i]"),
        ("-3", "-3"),
        ("0 - a[i]", "0 - a[i]"),
        ("0 - 0", "0 - 0"),
        ("-0", "-0"),
        ("- -a[i]", "- -a[i]"),
        ("a[i] - -(b[i] + 0)", "a[i] - -(b[i] + 0)"),
        ("max(a[i], -b[i]) / (2 * c[i])", "max(a[i], -b[i]) / (2 * c[i])"),
        ("2147483647 + min(0, a[i])", "2147483647 + min(0, a[i])"),
    ],
)
def test_integer_expressions_tell_negation_from_subtraction(source, expected):
    assert stmt_text(I32 + f"T[i] max= {source}") == [f"T[i] max= {expected}"]


@pytest.mark.parametrize(
    "dtype, source, expected",
    [
        ("f32", "0.1", "0.1"),
        ("f32", "2.0", "2"),
        ("f32", "2.", "2"),
        ("f32", ".5", "0.5"),
        ("f32", "1e-3", "0.001"),
        ("f32", "1.5E+2", "150"),
        ("f32", "3.14159265358979", "3.1415927"),
        ("f32", "16777217", "16777216"),
        ("f32", "1e400", "1e999"),
        ("f32", "3.5e38", "1e999"),
        ("f32", "1e-50", "0"),
        ("f32", "1e-45", "1e-45"),
        ("f32", "1e20", "1e+20"),
        ("f64", "0.1", "0.1"),
        ("f64", "3.14159265358979", "3.14159265358979"),
        ("f64", "1e-300", "1e-300"),
        ("f64", "123456789012345678", "123456789012345680"),
        ("i32", "007", "7"),
    ],
)
def test_constants_print_their_shortest_exact_spelling(dtype, source, expected):
    lines = stmt_text(f"tensor T : {dtype}[N] output\nT[i] = {source}")
    assert lines == [f"T[i] = {expected}"]


# --- strings, hardware ---------------------------------------------------------------


@pytest.mark.parametrize(
    "raw, escaped",
    [
        ('say \\"hi\\"', 'say \\"hi\\"'),
        ("back\\\\slash", "back\\\\slash"),
        ("two\\nlines\\tand tab", "two\\nlines\\tand tab"),
        ("# not a comment } {", "# not a comment } {"),
        ("unicode \u00e9\u4e2d", "unicode \u00e9\u4e2d"),
        ("", ""),
    ],
)
def test_doc_strings_are_escaped(raw, escaped):
    printed = assert_round_trip(f'design t {{ doc "{raw}" }}')
    assert f'  doc "{escaped}"\n' in printed


def test_hardware_numbers_print_compactly():
    printed = assert_round_trip(
        "design t { hardware { frequency 2.90 GHz; cores 2.0; simd 512 bits; big 1e22; tiny .000001; huge 1e999 x 0 } }"
    )
    for line in ("frequency 2.9 GHz", "cores 2", "simd 512 bits", "big 1e+22", "tiny 1e-06", "huge 1e999", "x 0"):
        assert f"    {line}\n" in printed


def test_hardware_levels():
    printed = assert_round_trip(
        "design t { hardware named { cache L1 { size 48 KiB line 64 B } cache L2 { } dram { bandwidth 20 GB/s } } }"
    )
    assert "  hardware named {\n    cache L1 { size 48 KiB; line 64 B }\n    cache L2 {}\n" in printed
    assert "    dram { bandwidth 20 GB/s }\n  }\n" in printed


def test_a_field_named_like_a_unit_is_kept_apart_from_a_unitless_value():
    # `cores 2` then `B 3` on the next line would read as `cores 2 B`, then `3`.
    printed = assert_round_trip("design t { hardware { cores 2; B 3; GBx 4; size 1 KiB B2 5 } }")
    assert "    cores 2;\n    B 3;\n    GBx 4\n    size 1 KiB\n    B2 5\n" in printed


def test_hw_file_and_bare_ops():
    module = build("hardware box { cores 4 dram { size 8 GiB } }")
    expected = "hardware box {\n  cores 4\n  dram { size 8 GiB }\n}\n"
    assert print_design(module) == expected
    (hw,) = module.body.block.ops
    assert print_design(hw) == expected
    assert print_design(build("hardware {}")) == "hardware {}\n"
    design = build(CANONICAL).body.block.first_op
    assert isinstance(design, d.DesignOp)
    assert print_design(design) == CANONICAL


# --- what cannot be printed ---------------------------------------------------------------


def test_numbers_without_a_spelling_are_refused():
    assert format_number(2.0) == "2"
    assert format_number(2.9) == "2.9"
    for bad in (-1.0, float("nan"), -0.0):
        with pytest.raises(DesignPrintError):
            format_number(bad)


def test_foreign_ops_are_refused():
    from xdsl.dialects.builtin import ModuleOp

    with pytest.raises(DesignPrintError):
        print_design(ModuleOp([]))
    with pytest.raises(DesignPrintError):
        print_design(ModuleOp([d.MetricOp("latency")]))
    with pytest.raises(DesignPrintError):
        print_design(d.DesignOp("t", [dv.ComputeRootOp()]))
