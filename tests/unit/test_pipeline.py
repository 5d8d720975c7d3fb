"""Pipeline strings to passes: xDSL's syntax, one-line errors that say what to change."""

from dataclasses import dataclass

import pytest
from xdsl.passes import ModulePass

from irkit.passes.registry import IRKIT_PASSES, all_passes
from irkit.tools.pipeline import PassLoadError, PipelineError, closest, parse, parse_specs


@dataclass(frozen=True)
class TilePass(ModulePass):
    name = "test-tile"
    size: int
    label: str | None = None
    sizes: tuple[int, ...] = (1, 2)
    fast: bool = False

    def apply(self, ctx, op):
        pass


def broken_factory():
    raise ImportError("no module named 'nowhere'")


PASSES = {"test-tile": lambda: TilePass, "canonicalize": all_passes()["canonicalize"], "broken": broken_factory}


def one_line(exc: Exception) -> str:
    text = str(exc)
    assert "\n" not in text
    return text


def test_empty_pipeline_is_no_passes():
    assert parse("", PASSES) == []


def test_options_are_typed_and_dashes_become_underscores():
    (p,) = parse("test-tile{size=4 label=hello sizes=8,16 fast=true}", PASSES)
    assert p == TilePass(size=4, label="hello", sizes=(8, 16), fast=True)
    (q,) = parse('test-tile{size=2 label="a b"}', PASSES)
    assert q.label == "a b"


def test_several_passes_in_order():
    passes = parse("test-tile{size=1},canonicalize,test-tile{size=3}", PASSES)
    assert [p.name for p in passes] == ["test-tile", "canonicalize", "test-tile"]
    assert passes[2].size == 3


def test_unknown_pass_suggests_the_closest_name():
    with pytest.raises(PipelineError) as err:
        parse("canonicalise", PASSES)
    assert one_line(err.value) == "unknown pass 'canonicalise'; did you mean 'canonicalize'?"


def test_unknown_pass_without_a_close_name_points_at_the_list():
    with pytest.raises(PipelineError) as err:
        parse("zzqqxx", PASSES)
    assert "unknown pass 'zzqqxx'" in one_line(err.value)
    assert "did you mean" not in str(err.value)
    assert "--list-passes" in str(err.value)


@pytest.mark.parametrize(
    "spec, column, reason",
    [
        ("test-tile{size=1,label=x", 23, "expected either a space or `}`"),
        ("test-tile,,canonicalize", 11, "expected pass name"),
        ("test-tile{size=1}x", 18, "expected a comma"),
        ("test-tile canonicalize", 10, "expected a comma or pass arguments"),
    ],
)
def test_syntax_errors_name_the_column(spec, column, reason):
    with pytest.raises(PipelineError) as err:
        parse(spec, PASSES)
    text = one_line(err.value)
    assert text.startswith(f"malformed pass pipeline '{spec}' at column {column}: ")
    assert reason in text


def test_unknown_option_suggests_and_lists_the_options():
    with pytest.raises(PipelineError) as err:
        parse("test-tile{size=1 sise=2}", PASSES)
    text = one_line(err.value)
    assert "pass 'test-tile' has no option 'sise'" in text
    assert "did you mean 'size'?" in text
    assert "label: str|None" in text


def test_option_of_a_pass_without_options():
    with pytest.raises(PipelineError) as err:
        parse("canonicalize{depth=1}", PASSES)
    assert "(it takes no options)" in one_line(err.value)


@pytest.mark.parametrize(
    "spec, wanted, got",
    [
        ("test-tile{size=abc}", "expects int", "got 'abc'"),
        ("test-tile{size=1 sizes=a,b}", "expects tuple[int, ...]", "got 'a,b'"),
        ("test-tile{size=1 fast=3}", "expects bool", "got '3'"),
    ],
)
def test_wrongly_typed_option(spec, wanted, got):
    with pytest.raises(PipelineError) as err:
        parse(spec, PASSES)
    text = one_line(err.value)
    assert wanted in text and got in text


def test_missing_required_option():
    with pytest.raises(PipelineError) as err:
        parse("test-tile", PASSES)
    assert one_line(err.value) == "pass 'test-tile' requires option 'size'"


def test_a_broken_registration_is_not_a_usage_error():
    with pytest.raises(PassLoadError) as err:
        parse("broken", PASSES)
    assert "cannot load pass 'broken'" in str(err.value)


def test_parse_specs_keeps_raw_options():
    (spec,) = parse_specs("test-tile{size=4}")
    assert spec.name == "test-tile" and spec.parameters == {"size": (4,)}


def test_closest():
    assert closest("cse2", ["cse", "dce"]) == "cse"
    assert closest("totally-different", ["cse"]) is None


def test_registry_has_check_design_and_xdsl_passes():
    assert "check-design" in IRKIT_PASSES
    passes = all_passes()
    assert passes["check-design"]().name == "check-design"
    assert "canonicalize" in passes and "cse" in passes
