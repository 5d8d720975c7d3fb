"""Comments of a document: where they attach and where the printer puts them back.

The properties over random documents are in test_fmt_properties.py; these
are the placements one by one, and the API a tool that rewrites a
document uses (`irkit.frontend.document`).
"""

import pytest

import irkit.directives as dv
from irkit.backends.design_text import print_design
from irkit.dialects import design as d
from irkit.frontend.comments import scan_comments
from irkit.frontend.document import format_document, parse_document, replace_schedule, rewrite_schedule

EVERY_PLACE = """\
# file header

# second paragraph of the header
design all {   # on the design line
  doc "x # not a comment"   # after doc
  sizes { M = 4,   # rows
          N = 8    # cols
          # end of sizes
  }
  sizes { K } # one-line sizes
  tensor A : f32[M, K] input  # A
  # before B
  tensor B : f32[K,   # mid-item
                 N] input
  tensor C : f32[M, N] output

  C[i, j] += A[i, k] * B[k, j]
  layout {   # layout header
    A : row_major   # A's layout
    # before B's layout
    B : col_major
  }   # after layout
  layout { C : row_major }
  schedule C {  # schedule header
    # before tile
    tile i, j by 4, 8 -> io, jo, ii, ji   # tile
    parallel io; vectorize ji by 8  # after vectorize
    # end of schedule
  }
  schedule D { }  # empty schedule
  hardware h {  # hw
    cores 2   # two
    cache L1 { size 48 KiB   # L1 size
      line 64 B }
    dram { bandwidth 28 GB/s }  # dram
    # end of hw
  }
  assume { M % 4 == 0;  # divisible
    relaxed_math }
  metric latency  # metric
  # before the design's brace
}  # after the design
# at the end of the file

# and after a blank line
"""

EVERY_PLACE_FORMATTED = """\
# file header

# second paragraph of the header
design all {  # on the design line
  doc "x # not a comment"  # after doc

  sizes {
    M = 4  # rows
    N = 8  # cols
    # end of sizes
  }
  sizes { K }  # one-line sizes

  tensor A : f32[M, K] input  # A
  # before B
  # mid-item
  tensor B : f32[K, N] input
  tensor C : f32[M, N] output

  C[i, j] += A[i, k] * B[k, j]

  layout {  # layout header
    A : row_major  # A's layout
    # before B's layout
    B : col_major
  }  # after layout
  layout {
    C : row_major
  }

  schedule C {  # schedule header
    # before tile
    tile i, j by 4, 8 -> io, jo, ii, ji  # tile
    parallel io
    vectorize ji by 8                    # after vectorize
    # end of schedule
  }
  schedule D {}  # empty schedule

  hardware h {  # hw
    cores 2  # two
    cache L1 {
      size 48 KiB  # L1 size
      line 64 B
    }
    dram { bandwidth 28 GB/s }  # dram
    # end of hw
  }

  assume {
    M % 4 == 0  # divisible
    relaxed_math
  }

  metric latency  # metric
  # before the design's brace
}  # after the design
# at the end of the file

# and after a blank line
"""


def test_every_place_a_comment_can_stand():
    assert format_document(EVERY_PLACE, "all.design") == EVERY_PLACE_FORMATTED
    assert format_document(EVERY_PLACE_FORMATTED, "all.design") == EVERY_PLACE_FORMATTED


def test_without_comments_the_text_is_print_design():
    doc = parse_document(EVERY_PLACE, "all.design")
    plain = print_design(doc.module)
    assert "#" not in plain.replace('"x # not a comment"', "")
    assert parse_document(plain, "p.design").module.is_structurally_equivalent(doc.module)


def test_the_scan_skips_strings_and_escapes():
    text = 'design t { doc "a \\" # b" # real\n}  #end'
    assert [(c.text, c.line, c.col, c.own_line) for c in scan_comments(text)] == [
        ("# real", 1, 27, False),
        ("#end", 2, 4, False),
    ]


def test_crlf_line_ends_do_not_end_up_in_comments():
    formatted = format_document("design t {  # x\r\n  metric m  # y\r\n}\r\n", "t.design")
    assert formatted == "design t {  # x\n  metric m  # y\n}\n"


def test_comments_of_an_empty_block_go_to_the_next_item():
    text = "design t {\n  tensor A : f32[4] input\n  layout {\n    # nothing yet\n  }\n  metric m\n}\n"
    assert format_document(text, "t.design") == (
        "design t {\n  tensor A : f32[4] input\n\n  # nothing yet\n  metric m\n}\n"
    )


def test_blocks_merge_unless_a_comment_stands_at_the_seam():
    merged = format_document("design t { layout { A : row_major } layout { B : col_major } }", "t.design")
    assert merged.count("layout {") == 1
    kept = format_document("design t { layout { A : row_major }  # A\n  layout { B : col_major } }", "t.design")
    assert kept.count("layout {") == 2 and "}  # A\n" in kept


def test_a_blank_line_after_a_heading_comment_is_kept():
    text = "design t {\n  tensor A : f32[4] input\n\n  # -- outputs --\n\n  tensor B : f32[4] output\n}\n"
    assert format_document(text, "t.design") == text


def test_trailing_comments_of_consecutive_lines_are_aligned():
    text = "design t { schedule C { parallel i  # p\n split j by 4 -> jo, ji  # s\n unroll jo by 2 } }"
    lines = format_document(text, "t.design").split("\n")
    assert [line.index("#") for line in lines if "#" in line] == [28, 28]


def test_hardware_file_comments():
    text = "# measured\nhardware host {  # 2 cores\n  cores 2\n  cache L1 { size 48 KiB }  # per core\n}\n"
    assert format_document(text, "host.hw") == text


def test_a_field_keyed_like_a_unit_keeps_its_semicolon_with_comments():
    text = "hardware h {\n  cache L { x 1;  # x\n  B 2 } }"
    formatted = format_document(text, "h.hw")
    assert "    x 1;  # x\n    B 2\n" in formatted
    assert format_document(formatted, "h.hw") == formatted


# --- rewriting a schedule -------------------------------------------------------------

SCHEDULED = """\
design t {
  tensor C : f32[4, 4] output
  C[i, j] = 1

  # C's schedule
  schedule C {  # tuned by hand
    tile i, j by 4, 8 -> io, jo, ii, ji  # L1 tiles
    parallel io                          # one row of tiles a core
    vectorize ji by 8                    # AVX2
    unroll ii by 2                       # gone in the new one
    # end
  }  # done

  metric latency  # the metric
}
"""


def new_schedule(stage: str = "C") -> d.ScheduleOp:
    return d.ScheduleOp(
        stage,
        [
            dv.TileOp(["i", "j"], [4, 8], ["io", "jo"], ["ii", "ji"]),
            dv.VectorizeOp("ji", 16),
            dv.ParallelOp("jo"),
        ],
    )


def test_replacing_a_schedule_keeps_every_other_comment():
    text, dropped = rewrite_schedule(SCHEDULED, "t.design", new_schedule())
    assert text == """\
design t {
  tensor C : f32[4, 4] output

  C[i, j] = 1

  # C's schedule
  schedule C {  # tuned by hand
    tile i, j by 4, 8 -> io, jo, ii, ji  # L1 tiles
    vectorize ji by 16                   # AVX2
    parallel jo
    # end
  }  # done

  metric latency  # the metric
}
"""
    # `parallel io` became `parallel jo` (same kind, another loop): its comment goes; so does unroll's.
    assert [c.text for c in dropped] == ["# one row of tiles a core", "# gone in the new one"]


def test_a_directive_on_the_same_loop_keeps_its_comment():
    doc = parse_document(SCHEDULED, "t.design")
    schedule = d.ScheduleOp("C", [dv.ParallelOp("io"), dv.VectorizeOp("ji", 4)])
    dropped = replace_schedule(doc, schedule)
    assert "    parallel io        # one row of tiles a core\n    vectorize ji by 4  # AVX2\n    # end\n" in doc.format()
    assert [c.text for c in dropped] == ["# L1 tiles", "# gone in the new one"]


def test_adding_a_schedule_where_there_was_none():
    text, dropped = rewrite_schedule(SCHEDULED, "t.design", new_schedule("D"))
    assert dropped == []
    assert text.index("schedule C {") < text.index("schedule D {\n    tile i, j") < text.index("metric")
    assert text.count("#") == SCHEDULED.count("#")


def test_replacing_with_an_op_of_another_module_clones_it():
    other = parse_document(SCHEDULED, "other.design")
    schedule = next(op for op in other.design.body.block.ops if isinstance(op, d.ScheduleOp))
    text, dropped = rewrite_schedule(SCHEDULED, "t.design", schedule)
    assert text == format_document(SCHEDULED, "t.design") and dropped == []
    assert schedule.parent is not None  # the other module is left alone


def test_any_op_can_hand_its_comments_to_a_replacement():
    doc = parse_document(SCHEDULED, "t.design")
    metric = next(op for op in doc.design.body.block.ops if isinstance(op, d.MetricOp))
    replacement = d.MetricOp("throughput")
    doc.comments.move(metric, replacement)
    metric.parent.insert_op_before(replacement, metric)
    metric.detach()
    metric.erase()
    assert "  metric throughput  # the metric\n" in doc.format()


def test_a_hardware_file_has_no_schedule():
    doc = parse_document("hardware h { cores 2 }", "h.hw")
    with pytest.raises(ValueError):
        replace_schedule(doc, new_schedule())
