"""The registry of named operations (`matmul`, `conv2d`, `softmax`, ...).

One entry per operation says what a call must look like (how many operand
tensors, which parameters with which kinds and defaults) and how the
result's shape follows from the operands' shapes.  The design dialect's
verifier uses `check_call`; the semantic checker uses `result_shape` to
compare with the declared output.  Adding a named operation to the
language starts here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from math import prod

from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, StringAttr
from xdsl.ir import Attribute

from irkit import registry
from irkit.affine_text import BinOp, Const, Expr, evaluate
from irkit.suggest import suggest


class NamedOpError(ValueError):
    """A call of a named operation that does not fit its signature."""


@dataclass(frozen=True)
class Param:
    """A parameter: `kind` is 'int', 'name' or 'ints'; `choices` limits names.

    `minimum` bounds an 'int' from below (checked, with a message naming the
    parameter).  `candidates` lists, from the rank of the result, the values
    raising tries when it recognises the operation in generated code
    (default for an 'int': 0 to 3; for a 'name': its `choices`; for 'ints':
    the permutations of the first operand's dimensions).
    """

    kind: str
    default: object = None
    choices: tuple[str, ...] = ()
    help: str = ""
    minimum: int | None = None
    candidates: Callable[[int], list[object]] | None = None


# A shape rule maps operand shapes and parameter values to the result shape
# and the pairs of operand dimensions that must be equal (with a phrase
# naming them for the diagnostic).
Agree = list[tuple[Expr, Expr, str]]
ShapeFn = Callable[[list[list[Expr]], dict[str, object]], tuple[list[Expr], Agree]]


@dataclass(frozen=True)
class NamedOpSpec:
    name: str
    arity: int
    summary: str
    shape_fn: ShapeFn
    params: dict[str, Param] = field(default_factory=dict)
    ranks: tuple[int | None, ...] = ()  # required operand ranks (None = any)
    # The names of the loops a schedule refers to, from the result rank and
    # the parameter values: result dimensions first, then reductions.
    loops_fn: Callable[[int, dict[str, object]], list[str]] | None = None
    # The extent of each loop (in `loops` order) from the operand shapes.
    domain_fn: Callable[[list[list[Expr]], dict[str, object]], list[Expr]] | None = None
    # The loops whose iterations combine into one element, as positions in
    # `loops`, from the result rank and parameter values (default: the
    # loops beyond the result's dimensions).
    reductions_fn: Callable[[int, dict[str, object]], list[int]] | None = None
    # Arithmetic operations per point of the domain (2 for a multiply-add),
    # for the GFLOP/s figures of `irkit run --bench` and `irkit predict`.
    flops_per_point: int = 0

    def domain(self, shapes: list[list[Expr]], params: dict[str, Attribute]) -> list[Expr]:
        """Loop extents from operand shapes; by default the result's dimensions."""
        values = self.values(params)
        if self.domain_fn is not None:
            return self.domain_fn(shapes, values)
        result, _ = self.shape_fn(shapes, values)
        return result

    def reduction_loops(self, result_rank: int, params: dict[str, Attribute]) -> set[str]:
        """Loops whose iterations combine into one element: by default those beyond the
        result's dimensions (softmax names its axis: its max and sum run along it)."""
        loops = self.loops(result_rank, params)
        if self.reductions_fn is not None:
            return {loops[i] for i in self.reductions_fn(result_rank, self.values(params))}
        return set(loops[result_rank:])

    def loops(self, result_rank: int, params: dict[str, Attribute]) -> list[str]:
        """Loop names of this operation's nest, for schedules."""
        if self.loops_fn is None:
            return _generic_loops(result_rank)
        return self.loops_fn(result_rank, self.values(params))

    def terms_per_element(self, shapes: list[tuple[int, ...]], values: dict[str, object]) -> int:
        """How many terms combine into one result element at concrete operand shapes (the
        product of the reduction loops' extents); the oracle's tolerance grows with it."""
        full = {k: p.default for k, p in self.params.items()}
        full.update({k: v for k, v in values.items() if v is not None})
        exprs: list[list[Expr]] = [[Const(n) for n in shape] for shape in shapes]
        result, _ = self.shape_fn(exprs, full)
        domain = self.domain_fn(exprs, full) if self.domain_fn is not None else result
        rank = len(result)
        reductions = self.reductions_fn(rank, full) if self.reductions_fn is not None else range(rank, len(domain))
        return prod(int(evaluate(domain[i], {})) for i in reductions)

    def check_call(self, operands: list[str], params: dict[str, Attribute]) -> None:
        """Check arity and parameters; raise `NamedOpError` with a fix-it message."""
        if len(operands) != self.arity:
            raise NamedOpError(
                f"'{self.name}' takes {self.arity} operand tensor{'s' if self.arity != 1 else ''}, got {len(operands)}"
            )
        for key, value in params.items():
            if key not in self.params:
                known = ", ".join(self.params) or "none"
                raise NamedOpError(f"'{self.name}' has no parameter '{key}' (parameters: {known})" + suggest(key, self.params))
            _check_param(self.name, key, self.params[key], value)

    def values(self, params: dict[str, Attribute]) -> dict[str, object]:
        """Parameter values as Python objects, defaults filled in."""
        out = {k: p.default for k, p in self.params.items()}
        for key, value in params.items():
            out[key] = param_value(value)
        return out

    def result_shape(self, shapes: list[list[Expr]], params: dict[str, Attribute]) -> tuple[list[Expr], Agree]:
        """The result's shape and the dimensions that must agree; `NamedOpError` on a rank mismatch."""
        for i, (rank, shape) in enumerate(zip(self.ranks, shapes)):
            if rank is not None and len(shape) != rank:
                raise NamedOpError(f"operand {i + 1} of '{self.name}' must have rank {rank}, it has rank {len(shape)}")
        return self.shape_fn(shapes, self.values(params))


def param_value(attr: Attribute) -> object:
    if isinstance(attr, IntegerAttr):
        return attr.value.data
    if isinstance(attr, StringAttr):
        return attr.data
    if isinstance(attr, ArrayAttr):
        return [param_value(a) for a in attr.data]
    raise NamedOpError(f"unsupported parameter value {attr}")


def _check_param(op: str, key: str, spec: Param, value: Attribute) -> None:
    if spec.kind == "int" and not isinstance(value, IntegerAttr):
        raise NamedOpError(f"parameter '{key}' of '{op}' must be an integer")
    if spec.kind == "ints" and not (
        isinstance(value, ArrayAttr) and all(isinstance(v, IntegerAttr) for v in value.data)
    ):
        raise NamedOpError(f"parameter '{key}' of '{op}' must be a list of integers like [1, 0]")
    if spec.kind == "name":
        if not isinstance(value, StringAttr):
            raise NamedOpError(f"parameter '{key}' of '{op}' must be one of {', '.join(spec.choices)}")
        if spec.choices and value.data not in spec.choices:
            raise NamedOpError(f"parameter '{key}' of '{op}' must be one of {', '.join(spec.choices)}, got '{value.data}'")
    if spec.kind == "int" and spec.minimum is not None and value.value.data < spec.minimum:  # type: ignore[union-attr]
        bound = {0: "must not be negative", 1: "must be positive"}.get(spec.minimum, f"must be at least {spec.minimum}")
        raise NamedOpError(f"parameter '{key}' of '{op}' {bound}, got {value.value.data}")  # type: ignore[union-attr]


# --- shape rules ---------------------------------------------------------------


def _matmul(shapes: list[list[Expr]], _p: dict[str, object]) -> list[Expr]:
    (m, k), (k2, n) = shapes
    return [m, n], [(k, k2, "the columns of the first operand and the rows of the second")]


def _batch_matmul(shapes: list[list[Expr]], _p: dict[str, object]) -> list[Expr]:
    (b, m, k), (b2, k2, n) = shapes
    return [b, m, n], [
        (b, b2, "the batch dimensions of both operands"),
        (k, k2, "the contracted dimensions (last of the first, middle of the second)"),
    ]


def _out_dim(size: Expr, kernel: Expr, stride: int, padding: int) -> Expr:
    # (size + 2 * padding - kernel) / stride + 1
    num = BinOp("-", BinOp("+", size, Const(2 * padding)), kernel)
    return BinOp("+", BinOp("/", num, Const(stride)), Const(1))


def _conv2d(shapes: list[list[Expr]], p: dict[str, object]) -> list[Expr]:
    inp, wt = shapes
    stride, padding = int(p["stride"]), int(p["padding"])  # type: ignore[arg-type]
    if p["layout"] == "nchw":
        n, c, h, w = inp
        f, c2, r, s = wt
        agree = [(c, c2, "the input channels of the image (dimension 2) and the weights (dimension 2)")]
        return [n, f, _out_dim(h, r, stride, padding), _out_dim(w, s, stride, padding)], agree
    n, h, w, c = inp
    r, s, c2, f = wt
    agree = [(c, c2, "the input channels of the image (dimension 4) and the weights (dimension 3)")]
    return [n, _out_dim(h, r, stride, padding), _out_dim(w, s, stride, padding), f], agree


def _softmax(shapes: list[list[Expr]], p: dict[str, object]) -> list[Expr]:
    (shape,) = shapes
    axis = int(p["axis"])  # type: ignore[arg-type]
    if not -len(shape) <= axis < len(shape):
        raise NamedOpError(f"softmax axis {axis} is out of range for rank {len(shape)}")
    return list(shape), []


def _transpose(shapes: list[list[Expr]], p: dict[str, object]) -> list[Expr]:
    (shape,) = shapes
    perm = p["perm"]
    if perm is None:
        return list(reversed(shape)), []
    perm = list(perm)  # type: ignore[call-overload]
    if sorted(perm) != list(range(len(shape))):
        raise NamedOpError(f"perm {perm} is not a permutation of the {len(shape)} dimensions")
    return [shape[i] for i in perm], []


def _generic_loops(rank: int) -> list[str]:
    return list("ijklmnop"[:rank]) if rank <= 8 else [f"d{i}" for i in range(rank)]


def _conv_domain(shapes: list[list[Expr]], p: dict[str, object]) -> list[Expr]:
    (out, _), inp, wt = _conv2d(shapes, p), shapes[0], shapes[1]
    if p["layout"] == "nchw":  # n, f, y, x, c, r, s
        return [inp[0], wt[0], out[2], out[3], inp[1], wt[2], wt[3]]
    return [inp[0], out[1], out[2], wt[3], wt[0], wt[1], inp[3]]  # n, y, x, f, r, s, c


def _conv_loops(_rank: int, p: dict[str, object]) -> list[str]:
    if p["layout"] == "nchw":
        return ["n", "f", "y", "x", "c", "r", "s"]
    return ["n", "y", "x", "f", "r", "s", "c"]


# irkit's own operations; plugins add theirs (irkit.extend.register_named_op).
NAMED_OPS: dict[str, NamedOpSpec] = registry.NAMED_OPS
NAMED_OPS |= {
    spec.name: spec
    for spec in (
        NamedOpSpec(
            "matmul",
            2,
            "C[i, j] = sum_k A[i, k] * B[k, j]",
            _matmul,
            ranks=(2, 2),
            loops_fn=lambda r, p: ["i", "j", "k"],
            domain_fn=lambda s, p: [s[0][0], s[1][1], s[0][1]],
            flops_per_point=2,
        ),
        NamedOpSpec(
            "batch_matmul",
            2,
            "C[b, i, j] = sum_k A[b, i, k] * B[b, k, j]",
            _batch_matmul,
            ranks=(3, 3),
            loops_fn=lambda r, p: ["b", "i", "j", "k"],
            domain_fn=lambda s, p: [s[0][0], s[0][1], s[1][2], s[0][2]],
            flops_per_point=2,
        ),
        NamedOpSpec(
            "conv2d",
            2,
            "2-D convolution of an image by a filter bank (cross-correlation, as in deep learning)",
            _conv2d,
            params={
                "stride": Param("int", 1, help="step between output pixels", minimum=1),
                "padding": Param("int", 0, help="zero padding on every side", minimum=0),
                "layout": Param("name", "nchw", ("nchw", "nhwc"), help="image and filter layout"),
            },
            ranks=(4, 4),
            loops_fn=_conv_loops,
            domain_fn=_conv_domain,
            flops_per_point=2,
        ),
        NamedOpSpec(
            "softmax",
            1,
            "exp(x - max) / sum(exp(x - max)) along one axis",
            _softmax,
            params={"axis": Param("int", -1, help="the axis that sums to one", candidates=lambda rank: list(range(rank)))},
            reductions_fn=lambda rank, p: [int(p["axis"]) % rank],  # type: ignore[call-overload]
            flops_per_point=5,  # max, subtract, exp, sum, divide per element
        ),
        NamedOpSpec(
            "transpose",
            1,
            "permute dimensions (reverse them by default)",
            _transpose,
            params={"perm": Param("ints", None, help="result dimension d is operand dimension perm[d]")},
        ),
    )
}


def register_spec(spec: NamedOpSpec) -> None:
    """Add a named operation to the design language (irkit.extend.register_named_op calls this)."""
    NAMED_OPS[spec.name] = spec


def get_named_op(name: str) -> NamedOpSpec:
    """The operation `name`: irkit's or a loaded plugin's (plugins load at the entry points)."""
    spec = NAMED_OPS.get(name)
    if spec is None:
        raise NamedOpError(f"unknown operation '{name}'; expected one of {', '.join(sorted(NAMED_OPS))}" + suggest(name, NAMED_OPS))
    return spec
