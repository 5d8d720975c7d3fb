"""Hypothesis strategies for random, syntactically valid design documents.

A document is generated as a list of tokens, every construct of the
grammar represented (sizes with and without defaults, tensors of every
element type with affine shapes, index statements with every assignment
and nested expressions, named operations with parameters, layout,
schedules with every directive, hardware references and inline blocks,
assumptions, metric, doc strings with escapes), then joined with random
whitespace, comments and optional `;` separators.

"Valid" means the frontend parses and builds it without a diagnostic
(`build_design`); it need not pass the semantic checker (names may be
undeclared, shapes may disagree).  Names never collide with a keyword of
the language, so whether a name parses does not depend on its context.
"""

from __future__ import annotations

import random
import re

from hypothesis import strategies as st

KEYWORDS = frozenset(
    """
    design doc sizes tensor scalar f32 f64 i32 input output temp layout row_major col_major order align
    schedule split tile by reorder interchange parallel vectorize unroll unroll_jam pack at compute_at compute_root hardware
    cache dram assume aligned noalias relaxed_math metric max min exp sqrt select
    bits B KiB MiB GiB KB MB GB Hz kHz MHz GHz ns us cycles
    """.split()
)
# Every unit the grammar's UNIT terminal reads (grammars/design.lark): a field name that starts
# like one of them after a number needs a `;` before it (`_unit_safe`).
UNITS = ("bits", "B", "KiB", "MiB", "GiB", "KB", "MB", "GB", "B/s", "KB/s", "MB/s", "GB/s", "TB/s",
         "KiB/s", "MiB/s", "GiB/s", "Hz", "kHz", "MHz", "GHz", "ns", "us", "cycles",
         "FLOP/s", "kFLOP/s", "MFLOP/s", "GFLOP/s", "TFLOP/s")  # fmt: skip
NAMED_OPS = ("matmul", "batch_matmul", "conv2d", "softmax", "transpose")

# Tokens next to which no whitespace is needed.
_TIGHT = frozenset("[](){},;:.*/%")

Tokens = list[str]

# Mostly a fixed pool (one cheap draw each: a document needs many names),
# sometimes any identifier at all.
NAME_POOL = (
    "A B2 C M N K H W I O P X Y Z a b c d m s t u v w t1 t2 bx out inp Wt tmp acc "
    "_ _x x_ row col sum sizes_ tile2 Order Input MAX e e5 E1 ab_cd_ef_gh_ij_kl"
).split()
names = st.one_of(
    st.sampled_from(NAME_POOL),
    st.sampled_from(NAME_POOL),
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,5}", fullmatch=True).filter(lambda s: s not in KEYWORDS),
)
index_vars = st.one_of(st.sampled_from(["i", "j", "k", "x", "y", "b", "n", "c", "r", "s", "io", "ji"]), names)
small_ints = st.integers(min_value=1, max_value=4096)


def signed_int(min_value: int = -64, max_value: int = 1 << 20) -> st.SearchStrategy[str]:
    """A SIGNED_INT token: `3`, `-3` or `+3`."""
    return st.builds(
        lambda v, plus: f"+{v}" if plus and v >= 0 else str(v),
        st.integers(min_value=min_value, max_value=max_value),
        st.booleans(),
    )


def positive_int() -> st.SearchStrategy[str]:
    return small_ints.map(str)


# --- affine expressions ----------------------------------------------------------


def affine(leaves: st.SearchStrategy[str]) -> st.SearchStrategy[Tokens]:
    """Token lists of an affine expression (the grammar's `aexpr`) over `leaves` and integers."""
    base = st.one_of(leaves.map(lambda n: [n]), signed_int(-16, 4096).map(lambda v: [v]))

    def extend(children: st.SearchStrategy[Tokens]) -> st.SearchStrategy[Tokens]:
        binary = st.builds(lambda a, op, b: [*a, op, *b], children, st.sampled_from("+-*/%"), children)
        return binary | children.map(lambda e: ["(", *e, ")"])

    return st.recursive(base, extend, max_leaves=5)


def shape_dim(leaf: st.SearchStrategy[str]) -> st.SearchStrategy[Tokens]:
    """A tensor dimension: `N`, `64`, `H + 2`, `2 * W`, `(N + 1) / 2`, or any affine expression."""
    common = st.one_of(
        leaf.map(lambda n: [n]),
        positive_int().map(lambda v: [v]),
        st.builds(lambda n, v: [n, "+", v], leaf, positive_int()),  # H + 2
        st.builds(lambda v, n: [v, "*", n], positive_int(), leaf),  # 2 * W
        st.builds(lambda n, v, w: ["(", n, "+", v, ")", "/", w], leaf, positive_int(), positive_int()),  # (N + 1) / 2
    )
    return st.one_of(common, common, affine(leaf))


def index_expr() -> st.SearchStrategy[Tokens]:
    """An access index: `i`, `x + 1`, `y - 2`, `2 * k`, or any affine expression."""
    common = st.one_of(
        index_vars.map(lambda n: [n]),
        st.builds(lambda n, op, v: [n, op, v], index_vars, st.sampled_from("+-"), st.integers(0, 8).map(str)),
        st.builds(lambda v, n: [v, "*", n], st.integers(1, 4).map(str), index_vars),
    )
    return st.one_of(common, common, common, affine(index_vars))


def comma_list(items: list[Tokens]) -> Tokens:
    out: Tokens = []
    for i, item in enumerate(items):
        if i:
            out.append(",")
        out.extend(item)
    return out


INDEX_EXPR = index_expr()


def access(tensors: st.SearchStrategy[str]) -> st.SearchStrategy[Tokens]:
    return st.builds(
        lambda t, idx: [t, "[", *comma_list(idx), "]"],
        tensors,
        st.lists(INDEX_EXPR, min_size=1, max_size=3),
    )


# --- statement expressions --------------------------------------------------------

float_numbers = st.one_of(
    st.integers(0, 1000).map(str),
    st.sampled_from(["0.5", ".5", "3.", "1e-3", "1E5", "1.5e+2", "2.25", "0.1", "1e400", "3.4028236e38", "1e-50"]),
    st.floats(min_value=0, max_value=1e30, allow_nan=False, allow_infinity=False).map(repr),
)
int_numbers = st.integers(0, 2**31 - 1).map(str)


def expression(readable: st.SearchStrategy[str], is_float: bool) -> st.SearchStrategy[Tokens]:
    """Token lists of a right-hand side; `exp`, `sqrt` and non-integer constants only if `is_float`."""
    number = float_numbers if is_float else int_numbers
    # a bare name reads a scalar or a size (or is reported, when it is neither)
    base = st.one_of(access(readable), access(readable), number.map(lambda n: [n]), readable.map(lambda n: [n]))
    functions = ["max", "min", "exp", "sqrt"] if is_float else ["max", "min"]

    def extend(children: st.SearchStrategy[Tokens]) -> st.SearchStrategy[Tokens]:
        binary = st.builds(lambda a, op, b: [*a, op, *b], children, st.sampled_from("+-*/"), children)
        paren = children.map(lambda e: ["(", *e, ")"])
        neg = children.map(lambda e: ["-", *e])

        def call(name: str, args: list[Tokens]) -> Tokens:
            return [name, "(", *comma_list(args[: 2 if name in ("max", "min") else 1]), ")"]

        calls = st.builds(call, st.sampled_from(functions), st.lists(children, min_size=2, max_size=2))
        select = st.builds(
            lambda a, op, b, x, y: ["select", "(", *a, op, *b, ",", *x, ",", *y, ")"],
            children, st.sampled_from(["<", "<=", ">", ">=", "==", "!="]), children, children, children,
        )  # fmt: skip
        return st.one_of(binary, binary, paren, neg, calls, select)

    return st.recursive(base, extend, max_leaves=8)


# Built once: strategies made inside a composite are validated on every draw,
# which costs more than the parsing they feed.  Statements read tensors from
# the name pool, which the declared tensors share.
FLOAT_EXPR = expression(names, is_float=True)
INT_EXPR = expression(names, is_float=False)
SHAPE_DIM = shape_dim(names)


# --- sections ----------------------------------------------------------------------


DOC_TEXT = st.text(
    st.characters(blacklist_categories=("Cc", "Cs")) | st.sampled_from(['"', "\\", "\n", "\t", "#", "}"]),
    max_size=20,
)


@st.composite
def doc_item(draw) -> Tokens:
    text = draw(DOC_TEXT)
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return ["doc", f'"{escaped}"']


@st.composite
def sizes_item(draw, sizes: list[str]) -> Tokens:
    # Separators (`,` or `;`) are optional, and may repeat or lead or trail.
    separators = st.sampled_from([[","], [","], [";"], [], [",", ","], [";", ","]])
    tokens = ["sizes", "{"]
    if draw(st.integers(0, 4)) == 0:
        tokens += draw(separators)
    for i, name in enumerate(sizes):
        if i:
            tokens += draw(separators)
        tokens.append(name)
        if draw(st.booleans()):
            tokens += ["=", draw(st.one_of(positive_int(), signed_int(-8, 1 << 40)))]
    if draw(st.booleans()):
        tokens += draw(separators)
    return [*tokens, "}"]


@st.composite
def tensor_item(draw, name: str, dtype: str) -> Tokens:
    dims = draw(st.lists(SHAPE_DIM, min_size=1, max_size=4))
    role = draw(st.sampled_from(["input", "output", "temp"]))
    return ["tensor", name, ":", dtype, "[", *comma_list(dims), "]", role]


@st.composite
def scalar_item(draw, name: str, dtype: str) -> Tokens:
    role = draw(st.sampled_from(["input", "input", "input", "output", "temp"]))
    return ["scalar", name, ":", dtype, role]


@st.composite
def index_statement(draw, tensors: dict[str, str]) -> Tokens:
    declared = list(tensors)
    target = draw(st.sampled_from(declared) if declared and draw(st.integers(0, 5)) else names)
    is_float = tensors.get(target, "f32") != "i32"
    lhs = draw(st.lists(INDEX_EXPR, min_size=1, max_size=3))
    assign = draw(st.sampled_from(["=", "+=", "max="]))
    rhs = draw(FLOAT_EXPR if is_float else INT_EXPR)
    return [target, "[", *comma_list(lhs), "]", assign, *rhs]


@st.composite
def named_statement(draw, tensors: dict[str, str]) -> Tokens:
    tensor = st.sampled_from(list(tensors)) | names if tensors else names
    op = draw(st.sampled_from(NAMED_OPS))
    target = draw(tensor)
    args: list[Tokens] = [[draw(tensor)] for _ in range(1 if op in ("softmax", "transpose") else 2)]
    params: list[Tokens] = []
    if op == "conv2d":
        options = {
            "stride": st.integers(1, 4).map(lambda v: [str(v)]),
            "padding": st.integers(0, 3).map(lambda v: [str(v)]),
            "layout": st.sampled_from(["nchw", "nhwc"]).map(lambda v: [v]),
        }
    elif op == "softmax":
        options = {"axis": signed_int(-2, 3).map(lambda v: [v])}
    elif op == "transpose":
        options = {
            "perm": st.permutations(range(draw(st.integers(0, 4)))).map(
                lambda p: ["[", *comma_list([[str(v)] for v in p]), "]"]
            )
        }
    else:
        options = {}
    keys = draw(st.permutations(list(options)))
    for key in keys[: draw(st.integers(0, len(keys)))]:
        params.append([key, "=", *draw(options[key])])
    return [target, "=", op, "(", *comma_list(args + params), ")"]


def _with_semicolons(draw, entries: list[Tokens]) -> Tokens:
    """Entries of a block, `;` before, between and after some of them."""
    out: Tokens = []
    for entry in entries:
        out += [";"] * draw(st.integers(0, 1))
        out += entry
    out += [";"] * draw(st.integers(0, 1))
    return out


@st.composite
def layout_item(draw, tensors: list[str]) -> Tokens:
    tensor = st.sampled_from(tensors) | names if tensors else names
    entries = []
    for _ in range(draw(st.integers(0, 4))):
        entry = [draw(tensor), ":"]
        kind = draw(st.sampled_from(["row_major", "col_major", "order", None]))
        if kind == "order":
            perm = draw(st.permutations(range(draw(st.integers(1, 4)))))
            entry += ["order", "(", *comma_list([[str(v)] for v in perm]), ")"]
        elif kind is not None:
            entry.append(kind)
        if kind is None or draw(st.booleans()):
            entry += ["align", draw(st.sampled_from(["16", "32", "64", "128", "4096"]))]
        entries.append(entry)
    return ["layout", "{", *_with_semicolons(draw, entries), "}"]


@st.composite
def directive(draw, loops: st.SearchStrategy[str]) -> Tokens:
    kind = draw(
        st.sampled_from(
            ["split", "tile", "reorder", "interchange", "parallel", "vectorize", "unroll", "unroll_jam", "pack",
             "compute_at", "compute_root"]
        )
    )
    if kind == "split":
        tokens = ["split", draw(loops), "by", draw(positive_int())]
        if draw(st.booleans()):
            tokens += ["->", draw(loops), ",", draw(loops)]
        return tokens
    if kind == "tile":
        n = draw(st.integers(1, 3))
        loop_names = [[draw(loops)] for _ in range(n)]
        tokens = ["tile", *comma_list(loop_names), "by", *comma_list([[draw(positive_int())] for _ in range(n)])]
        if draw(st.booleans()):
            tokens += ["->", *comma_list([[draw(loops)] for _ in range(2 * n)])]
        return tokens
    if kind == "reorder":
        return ["reorder", *comma_list([[v] for v in draw(st.lists(loops, min_size=1, max_size=5))])]
    if kind == "interchange":
        return ["interchange", draw(loops), ",", draw(loops)]
    if kind in ("parallel",):
        return ["parallel", draw(loops)]
    if kind == "vectorize":
        width = ["by", draw(st.sampled_from(["4", "8", "16"]))] if draw(st.booleans()) else []
        return ["vectorize", draw(loops), *width]
    if kind in ("unroll", "unroll_jam"):
        return [kind, draw(loops), "by", draw(positive_int())]
    if kind == "pack":
        return ["pack", draw(names), "at", draw(loops)]
    if kind == "compute_at":
        return ["compute_at", draw(names), ".", draw(loops)]
    return ["compute_root"]


DIRECTIVE = directive(index_vars)


@st.composite
def schedule_item(draw, tensors: list[str]) -> Tokens:
    stage = draw(st.sampled_from(tensors) | names if tensors else names)
    directives = draw(st.lists(DIRECTIVE, max_size=6))
    return ["schedule", stage, "{", *_with_semicolons(draw, directives), "}"]


hw_numbers = st.one_of(
    st.integers(0, 4096).map(str),
    st.sampled_from(["2.9", "2.96", "75.7", "0.5", ".25", "1e3", "3.0", "1e999"]),
    st.floats(min_value=0, max_value=1e12, allow_nan=False, allow_infinity=False).map(repr),
)


@st.composite
def hw_field(draw) -> Tokens:
    unit = [draw(st.sampled_from(UNITS))] if draw(st.booleans()) else []
    return [draw(names), draw(hw_numbers), *unit]


HW_FIELD = hw_field()


@st.composite
def hardware_block(draw, named: bool | None = None) -> Tokens:
    if named is None:
        named = draw(st.booleans())
    head = ["hardware", draw(names)] if named else ["hardware"]
    items = []
    for _ in range(draw(st.integers(0, 5))):
        kind = draw(st.sampled_from(["field", "field", "cache", "dram"]))
        if kind == "field":
            items.append(draw(HW_FIELD))
            continue
        fields = _unit_safe(draw(st.lists(HW_FIELD, max_size=3)))
        level = ["cache", draw(names)] if kind == "cache" else ["dram"]
        items.append([*level, "{", *_with_semicolons(draw, fields), "}"])
    return [*head, "{", *_with_semicolons(draw, _unit_safe(items)), "}"]


def _unit_safe(items: list[Tokens]) -> list[Tokens]:
    """Close a unit-less field with `;` when the next key starts like a unit.

    The grammar's UNIT terminal wins over NAME after a number even as a
    prefix: `size 48 B2 3` reads as `size 48 B` then `2`, an error.
    """
    out = [list(item) for item in items]
    for item, nxt in zip(out, out[1:]):
        if len(item) == 2 and item[0] not in ("cache", "dram") and nxt[0].startswith(UNITS):
            item.append(";")
    return out


@st.composite
def assume_item(draw, sizes: list[str], tensors: list[str]) -> Tokens:
    size = st.sampled_from(sizes) | names if sizes else names
    tensor = st.sampled_from(tensors) | names if tensors else names
    entries = []
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["divisible", "aligned", "noalias", "relaxed_math"]))
        if kind == "relaxed_math":
            entries.append(["relaxed_math"])
        elif kind == "divisible":
            entries.append([draw(size), "%", draw(positive_int()), "==", draw(st.sampled_from(["0", "+0", "-0"]))])
        elif kind == "aligned":
            entries.append(["aligned", "(", draw(tensor), ",", draw(st.sampled_from(["16", "64", "128"])), ")"])
        else:
            entries.append(
                ["noalias", "(", *comma_list([[t] for t in draw(st.lists(tensor, min_size=1, max_size=4))]), ")"]
            )
    return ["assume", "{", *_with_semicolons(draw, entries), "}"]


# --- documents --------------------------------------------------------------------


@st.composite
def document_tokens(draw) -> Tokens:
    """The tokens of a random valid design document."""
    sizes = draw(st.lists(names, max_size=4, unique=True))
    tensor_names = draw(st.lists(names, max_size=5, unique=True))
    tensors = {t: draw(st.sampled_from(["f32", "f64", "i32"])) for t in tensor_names}

    items: list[Tokens] = []
    if draw(st.booleans()):
        items.append(draw(doc_item()))
    split = draw(st.integers(0, len(sizes)))
    for chunk in (sizes[:split], sizes[split:]):
        if chunk or draw(st.integers(0, 4)) == 0:
            items.append(draw(sizes_item(chunk)))
    for name, dtype in tensors.items():
        items.append(draw(tensor_item(name, dtype)))
    for name in draw(st.lists(names, max_size=2, unique=True)):
        items.append(draw(scalar_item(name, draw(st.sampled_from(["f32", "f64", "i32"])))))
    for _ in range(draw(st.integers(0, 4))):
        maker = named_statement if draw(st.integers(0, 3)) == 0 else index_statement
        items.append(draw(maker(tensors)))
    for _ in range(draw(st.integers(0, 2))):
        items.append(draw(layout_item(tensor_names)))
    for _ in range(draw(st.integers(0, 3))):
        items.append(draw(schedule_item(tensor_names)))
    hardware = draw(st.sampled_from(["none", "ref", "block"]))
    if hardware == "ref":
        items.append(["hardware", draw(names)])
    elif hardware == "block":
        items.append(draw(hardware_block()))
    for _ in range(draw(st.integers(0, 2))):
        items.append(draw(assume_item(sizes, tensor_names)))
    if draw(st.booleans()):
        items.append(["metric", draw(st.sampled_from(["latency", "throughput"]) | names)])

    # Sections may come in any order; `;` may stand between them.
    order = draw(st.permutations(range(len(items)))) if draw(st.integers(0, 3)) == 0 else range(len(items))
    body: Tokens = []
    for i in order:
        body += [";"] * (draw(st.integers(0, 5)) == 0)
        body += items[i]
    return ["design", draw(names), "{", *body, "}"]


@st.composite
def hardware_file_tokens(draw) -> Tokens:
    """The tokens of a `.hw` file: one `hardware NAME { ... }` block."""
    return draw(hardware_block(named=draw(st.integers(0, 5)) > 0))


comment_text = st.text(st.characters(blacklist_categories=("Cc", "Cs")), max_size=12)


_COMMENTS = (
    "#",
    "# a comment",
    "#no space",
    "# } { ; design x {",
    '# "not a string',
    "# \u00e9\u4e2d\U0001f600",
    "#\t#",
)
_SPACES = ("\n", "\n\n  ", "\t", "\r\n", "   ", "\n    ")


@st.composite
def join_tokens(draw, tokens: Tokens) -> str:
    """Tokens joined with random whitespace, comments, or nothing where no space is needed.

    The layout comes from one drawn seed: a draw per gap would make
    generation many times slower than the parsing it feeds.
    """
    style = draw(st.sampled_from(["single", "tight", "wild"]))
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    comment = draw(comment_text)
    out: list[str] = []
    if rng.random() < 0.25:
        out.append(f"# {comment}\n")
    for i, tok in enumerate(tokens):
        if i:
            tight = tokens[i - 1] in _TIGHT or tok in _TIGHT
            if style == "single":
                sep = " "
            elif style == "tight":
                sep = "" if tight else " "
            else:
                choice = rng.randrange(10)
                if choice == 0:
                    sep = f"  {rng.choice(_COMMENTS + ('# ' + comment,))}\n"
                elif choice == 1:
                    sep = rng.choice(_SPACES)
                elif choice == 2 and tight:
                    sep = ""
                else:
                    sep = " "
            out.append(sep)
        out.append(tok)
    out.append(rng.choice(["\n", "  # end\n", "", "\n\n"]))
    return "".join(out)


@st.composite
def documents(draw) -> str:
    """The text of a random valid design document."""
    return draw(join_tokens(draw(document_tokens())))


@st.composite
def hardware_files(draw) -> str:
    """The text of a random valid `.hw` file."""
    return draw(join_tokens(draw(hardware_file_tokens())))


# --- tokens of existing text, for mutation ----------------------------------------------

TOKEN_RE = re.compile(
    r'"(?:[^"\\\n]|\\.)*"'  # strings
    r"|#[^\n]*"  # comments
    r"|max=|\+=|->|=="
    r"|[A-Za-z_][A-Za-z0-9_]*(?:/s)?"
    r"|\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?"
    r"|\S"
)


def tokenize(text: str) -> Tokens:
    """A rough token list of design text (comments kept, whitespace dropped)."""
    return TOKEN_RE.findall(text)


def untokenize(tokens: Tokens) -> str:
    return " ".join(t + "\n" if t.startswith("#") else t for t in tokens)


@st.composite
def mutated(draw, tokens: Tokens) -> str:
    """`tokens` with a few tokens deleted, duplicated or swapped, joined with spaces."""
    tokens = list(tokens)
    for _ in range(draw(st.integers(1, 4))):
        if not tokens:
            break
        i = draw(st.integers(0, len(tokens) - 1))
        kind = draw(st.sampled_from(["delete", "duplicate", "swap", "swap_near"]))
        if kind == "delete":
            del tokens[i]
        elif kind == "duplicate":
            tokens.insert(i, tokens[i])
        elif kind == "swap":
            j = draw(st.integers(0, len(tokens) - 1))
            tokens[i], tokens[j] = tokens[j], tokens[i]
        elif i + 1 < len(tokens):
            tokens[i], tokens[i + 1] = tokens[i + 1], tokens[i]
    return untokenize(tokens)


# --- documents with comments, for the formatter --------------------------------------

_COMMENT_BODIES = (
    "",
    " a note",
    " } { ; design x {",
    ' "not a string',
    " \u00e9\u4e2d\U0001f600",
    "\t# twice",
    " layout { A : row_major }",
    " trailing blanks   ",
)


@st.composite
def commented_documents(draw) -> tuple[str, list[str]]:
    """A random valid document (or `.hw` file) with comments in random places: (text, the comments in order).

    A comment may stand in any gap between two tokens, on a line of its
    own or after code, before the first token and after the last; each
    is numbered (`# c3 ...`) so that tests can follow it.  Blank lines
    come and go around them.
    """
    tokens = draw(st.one_of(document_tokens(), document_tokens(), hardware_file_tokens()))
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    density = draw(st.sampled_from([0.03, 0.15, 0.5]))
    extra = draw(comment_text)
    comments: list[str] = []

    def comment() -> str:
        body = rng.choice(_COMMENT_BODIES + (" " + extra,))
        comments.append(f"# c{len(comments)}{body}")
        return comments[-1]

    out: list[str] = []
    if rng.random() < 0.4:
        out.append(comment() + rng.choice(["\n", "\n\n"]))
    for i, tok in enumerate(tokens):
        if i:
            if rng.random() < density:
                before = rng.choice(["  ", "\n", "\n\n  ", " "])
                after = rng.choice(["\n", "\n\n", "\n  "])
                out.append(before + comment() + after)
            else:
                out.append(rng.choice([" ", " ", "\n  "]))
        out.append(tok)
    if rng.random() < 0.4:
        out.append("  " + comment())
    out.append("\n")
    while rng.random() < 0.3:
        out.append(rng.choice(["", "\n"]) + comment() + "\n")
    return "".join(out), comments


# --- schedules of statements whose loops are known (test_checker_soundness) -------------

SCHEDULE_KINDS = (
    "split", "split", "tile", "reorder", "interchange", "parallel", "vectorize", "unroll", "unroll_jam", "pack",
    "pack", "compute_at", "compute_root",
)  # fmt: skip


@st.composite
def stage_schedule(
    draw, loops: list[str], reads: list[str], consumers: dict[str, list[str]]
) -> list[str]:
    """Random directives (text lines) for one stage whose loops are `loops`: legal or not.

    The directives are replayed on the loop names as they are drawn, so that
    most name loops that exist at that point (split and tile make new ones);
    a few name loops that do not, to keep "unknown loop" in the mix.  `pack`
    names a tensor the stage reads (mostly), `compute_at` a stage of
    `consumers` (stage -> its unscheduled loops).  Factors are small and
    sometimes 1 or beyond the extents; nothing checks legality here, that is
    what the property is about.
    """
    nest = list(loops)
    out: list[str] = []
    fresh = iter(range(1, 100))

    def loop() -> str:
        if nest and draw(st.integers(0, 11)):
            return draw(st.sampled_from(nest))
        return draw(index_vars)

    factor = st.one_of(st.integers(1, 8), st.sampled_from([16, 32, 48, 64, 256]))
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(SCHEDULE_KINDS))
        if kind == "split":
            v, n = loop(), next(fresh)
            out.append(f"split {v} by {draw(factor)} -> {v}{n}o, {v}{n}i")
            if v in nest:
                pos = nest.index(v)
                nest[pos : pos + 1] = [f"{v}{n}o", f"{v}{n}i"]
        elif kind == "tile" and len(nest) >= 2:
            tiled = draw(st.lists(st.sampled_from(nest), min_size=2, max_size=2, unique=True))
            n = next(fresh)
            outer, inner = [f"{v}{n}o" for v in tiled], [f"{v}{n}i" for v in tiled]
            factors = ", ".join(str(draw(factor)) for _ in tiled)
            out.append(f"tile {', '.join(tiled)} by {factors} -> {', '.join(outer + inner)}")
            first = min(nest.index(v) for v in tiled)
            rest = [v for v in nest if v not in tiled]
            nest = rest[:first] + outer + inner + rest[first:]
        elif kind == "reorder" and len(nest) >= 2:
            named = draw(st.lists(st.sampled_from(nest), min_size=2, max_size=len(nest), unique=True))
            positions = sorted(nest.index(v) for v in named)
            for p, v in zip(positions, named):
                nest[p] = v
            out.append(f"reorder {', '.join(named)}")
        elif kind == "interchange" and len(nest) >= 2:
            a, b = draw(st.lists(st.sampled_from(nest), min_size=2, max_size=2, unique=True))
            ia, ib = nest.index(a), nest.index(b)
            nest[ia], nest[ib] = b, a
            out.append(f"interchange {a}, {b}")
        elif kind == "parallel":
            out.append(f"parallel {loop()}")
        elif kind == "vectorize":
            innermost = nest[-1] if nest and draw(st.integers(0, 3)) else loop()
            width = draw(st.sampled_from(["", " by 4", " by 8", " by 16"]))
            out.append(f"vectorize {innermost}{width}")
        elif kind in ("unroll", "unroll_jam"):
            out.append(f"{kind} {loop()} by {draw(st.integers(1, 8))}")
        elif kind == "pack":
            tensor = draw(st.sampled_from(reads)) if reads and draw(st.integers(0, 5)) else draw(names)
            out.append(f"pack {tensor} at {loop()}")
        elif kind == "compute_at" and consumers:
            stage = draw(st.sampled_from(sorted(consumers)))
            target = draw(st.sampled_from(consumers[stage])) if consumers[stage] else draw(index_vars)
            out.append(f"compute_at {stage}.{target}")
        elif kind == "compute_root":
            out.append("compute_root")
    return out


# ---- chains of matmuls (and matrix-vector products) with register blocks and packs -------------
#
# Loops are named the natural way in every stage (`i, j, k`, split into `io, ii` ...), so names
# repeat across stages: what raising recovers must go to the stage whose loops it read.


@st.composite
def _split_nest(draw, loops: list[str], reductions: set[str], factor) -> tuple[list[str], list[str], set[str]]:
    """(split/tile/reorder directives, the final loop order, reduction loops) of one stage."""
    out: list[str] = []
    nest = list(loops)
    reduction = set(reductions)
    outer_of: dict[str, str] = {}
    points = [v for v in loops if v not in reductions]
    if len(points) == 2 and draw(st.booleans()):
        a, b = points
        out.append(f"tile {a}, {b} by {draw(factor)}, {draw(factor)} -> {a}o, {b}o, {a}i, {b}i")
        nest = [f"{a}o", f"{b}o", f"{a}i", f"{b}i"] + [v for v in nest if v not in points]
        outer_of.update({f"{a}i": f"{a}o", f"{b}i": f"{b}o"})
    else:
        for v in loops:
            if draw(st.integers(0, 2)) == 0:
                out.append(f"split {v} by {draw(factor)} -> {v}o, {v}i")
                pos = nest.index(v)
                nest[pos : pos + 1] = [f"{v}o", f"{v}i"]
                outer_of[f"{v}i"] = f"{v}o"
                if v in reduction:
                    reduction |= {f"{v}o", f"{v}i"}
    if any(v in reductions for v in loops) and all(f"{v}o" not in nest for v in reductions):
        for v in sorted(reductions):
            if v in nest and draw(st.booleans()):
                out.append(f"split {v} by {draw(factor)} -> {v}o, {v}i")
                pos = nest.index(v)
                nest[pos : pos + 1] = [f"{v}o", f"{v}i"]
                outer_of[f"{v}i"] = f"{v}o"
                reduction |= {f"{v}o", f"{v}i"}
    order = list(draw(st.permutations(nest)))
    for inner, outer in outer_of.items():  # every inner loop inside its outer loop
        i, o = order.index(inner), order.index(outer)
        if i < o:
            order[i], order[o] = order[o], order[i]
    if order != nest:
        out.append(f"reorder {', '.join(order)}")
    return out, order, reduction


@st.composite
def blocked_stage_schedule(draw, loops: list[str], reductions: set[str], reads: list[str]) -> list[str]:
    """A stage's schedule: splits or a tile, a reorder, sometimes parallel / vectorize / unroll
    marks, then (in either order) an `unroll_jam` of a point loop that is not innermost and a
    `pack` of a tensor the stage reads.  Factors need not divide the sizes (remainders, tails)."""
    factor = st.integers(2, 17)
    out, order, reduction = draw(_split_nest(loops, reductions, factor))
    if order[0] not in reduction and draw(st.integers(0, 3)) == 0:
        out.append(f"parallel {order[0]}")
    if draw(st.integers(0, 3)) == 0:
        out.append(f"vectorize {order[-1]} by {draw(st.sampled_from([4, 8]))}")
    if len(order) > 2 and draw(st.integers(0, 4)) == 0:
        out.append(f"unroll {draw(st.sampled_from(order[:-1]))} by {draw(st.integers(2, 4))}")
    last: list[str] = []
    points = [v for v in order[:-1] if not v.endswith("o")]
    if points and draw(st.integers(0, 3)):
        last.append(f"unroll_jam {draw(st.sampled_from(points))} by {draw(st.integers(2, 7))}")
    if draw(st.booleans()):
        last.append(f"pack {draw(st.sampled_from(reads))} at {draw(st.sampled_from(order))}")
    return out + list(draw(st.permutations(last)))


@st.composite
def matmul_chain_documents(draw) -> str:
    """Two or three chained matmuls (`T = A@B; D = T@C`, or 3mm: `E = A@B; F = C@D; G = E@F`),
    or two chained matrix-vector products (1-D outputs), each stage scheduled at random by
    `blocked_stage_schedule`, at small sizes that the factors rarely divide."""
    kind = draw(st.sampled_from(["mm2", "mm3", "mv2"]))
    if kind == "mv2":
        sizes = ["M", "N", "K"]
        tensors = ["A : f32[K, N] input", "x : f32[N] input", "B : f32[M, K] input", "t : f32[K] temp",
                   "y : f32[M] output"]  # fmt: skip
        stages = [("t", "t[i] += A[i, j] * x[j]", ["A", "x"]), ("y", "y[i] += B[i, j] * t[j]", ["B", "t"])]
        loops, reductions = ["i", "j"], {"j"}
    else:
        three = kind == "mm3"
        sizes = ["M", "N", "K", "L", "P"] if three else ["M", "N", "K", "L"]
        if three:
            tensors = ["A : f32[M, K] input", "B : f32[K, N] input", "C : f32[N, L] input", "D : f32[L, P] input",
                       "E : f32[M, N] temp", "F : f32[N, P] temp", "G : f32[M, P] output"]  # fmt: skip
            stages = [("E", "E[i, j] += A[i, k] * B[k, j]", ["A", "B"]), ("F", "F[i, j] += C[i, k] * D[k, j]",
                      ["C", "D"]), ("G", "G[i, j] += E[i, k] * F[k, j]", ["E", "F"])]  # fmt: skip
        else:
            tensors = ["A : f32[M, K] input", "B : f32[K, N] input", "C : f32[N, L] input", "T : f32[M, N] temp",
                       "D : f32[M, L] output"]  # fmt: skip
            stages = [("T", "T[i, j] += A[i, k] * B[k, j]", ["A", "B"]), ("D", "D[i, j] += T[i, k] * C[k, j]",
                      ["T", "C"])]  # fmt: skip
        loops, reductions = ["i", "j", "k"], {"k"}
    values = ", ".join(f"{s} = {draw(st.integers(5, 40))}" for s in sizes)
    lines = [f"design {kind} {{", f"  sizes {{ {values} }}"]
    lines += [f"  tensor {t}" for t in tensors]
    lines += [f"  {statement}" for _, statement, _ in stages]
    for stage, _, reads in stages:
        directives = draw(blocked_stage_schedule(loops, reductions, reads))
        if directives:
            lines.append(f"  schedule {stage} {{ {'; '.join(directives)} }}")
    return "\n".join(lines) + "\n}\n"
