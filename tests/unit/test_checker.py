"""The semantic checker through its API: all errors at once, each located."""

import pytest

from irkit.checks.document import check_document
from irkit.diagnostics import DiagnosticError, SourceManager, render_json, render_text
from irkit.frontend import build_design, parse_design

BAD = """design bad {
  sizes { M = 64, N = 64 }
  tensor a : f32[M, N] input
  tensor t : f32[M, N] temp
  tensor b : f32[M, N] output
  tensor c : f32[M] output
  b[i, j] = a[i, j] + q[i, j]
  schedule b {
    split i by 0 -> io, ii
    vectorize jx by 8
  }
  layout { a : row_major; a : col_major }
  metric speed
}
"""


def diagnostics(text):
    module, diags = build_design(text, "bad.design")
    assert module is not None and diags == []
    return check_document(module)


def test_all_errors_are_reported_in_one_run():
    messages = [d.message for d in diagnostics(BAD)]
    expected = [
        "undefined tensor 'q'",
        "temp 't' is never read",
        "output 'c' is never written",
        "split factor must be positive, got 0",
        "unknown loop 'jx'",
        "conflicting layouts for 'a'",
        "unknown metric 'speed'",
    ]
    for fragment in expected:
        assert any(fragment in m for m in messages), (fragment, messages)


def test_focus_moves_the_caret_to_the_offending_word():
    diags = diagnostics(BAD)
    (loop,) = [d for d in diags if "unknown loop" in d.message]
    sources = SourceManager()
    sources.add("bad.design", BAD)
    text = render_text(loop, sources)
    assert text.splitlines()[0].startswith("bad.design:10:15: error: unknown loop 'jx'")
    assert text.splitlines()[2] == "  " + " " * 14 + "^~"


def test_json_diagnostics_have_spans():
    import json

    sources = SourceManager()
    sources.add("bad.design", BAD)
    rows = [json.loads(line) for line in render_json(diagnostics(BAD), sources).splitlines()]
    row = next(r for r in rows if "undefined tensor 'q'" in r["message"])
    assert (row["file"], row["line"], row["col"], row["end_col"], row["severity"]) == ("bad.design", 7, 23, 24, "error")
    assert set(row) >= {"file", "line", "col", "end", "severity", "message", "notes"}


def test_parse_design_raises_with_every_diagnostic_sorted():
    with pytest.raises(DiagnosticError) as info:
        parse_design(BAD, "bad.design")
    lines = [d.line for d in info.value.diagnostics]
    assert lines == sorted(lines) and len(lines) >= 7


def test_bounds_are_proved_for_a_halo():
    ok = """design blur { sizes { H = 8, W = 8 }
      tensor inp : f32[H + 2, W + 2] input
      tensor out : f32[H, W] output
      out[y, x] = inp[y, x] + inp[y + 2, x + 2] }"""
    assert diagnostics(ok) == []


def test_bounds_counterexample_is_given_for_symbolic_mismatch():
    bad = """design sym { sizes { M = 8, N = 16 }
      tensor a : f32[M] input
      tensor b : f32[N] output
      b[i] = a[i] }"""
    (diag,) = diagnostics(bad)
    assert "index 'i' ranges over dimension 1 of 'b' (N) but indexes dimension 1 of 'a' (M), which is smaller" in diag.message


def test_named_op_shapes_with_symbolic_sizes():
    doc = """design conv { sizes { N = 1, C = 64, F = 64, H = 56, W = 56 }
      tensor I : f32[N, C, H + 2, W + 2] input
      tensor Wt : f32[F, C, 3, 3] input
      tensor O : f32[N, F, H, W] output
      O = conv2d(I, Wt, stride = 1, padding = 0) }"""
    assert diagnostics(doc) == []
    assert any("dimension 3" in d.message for d in diagnostics(doc.replace("padding = 0", "padding = 1")))


def test_divisibility_assumptions_shape_the_samples():
    doc = """design half { sizes { N = 64 }
      tensor a : f32[N] input
      tensor b : f32[N / 2 * 2] output
      b[i] = a[i]
      assume { N % 2 == 0 } }"""
    assert diagnostics(doc) == []
