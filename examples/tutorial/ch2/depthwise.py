"""Tutorial chapter 2: `depthwise_conv2d` with its tensorop form.

Load it with `irkit-opt --plugin examples/tutorial/ch2/depthwise.py FILE -p lower-design,...`.
Documents using the operation now lower to tensorop, loops and C.
"""

from irkit.affine_text import BinOp, Const
from irkit.extend import NamedOperation, NamedOpSpec, Param, register_named_op
from irkit.passes.generalize import loop_dims


def out_dim(size, kernel, stride, padding):
    """(size + 2 * padding - kernel) / stride + 1, as an expression over size names."""
    padded = BinOp("+", size, Const(2 * padding))
    return BinOp("+", BinOp("/", BinOp("-", padded, kernel), Const(stride)), Const(1))


def shape(shapes, p):
    """The result's shape, and the operand dimensions that must be equal."""
    (n, c, h, w), (c2, r, s) = shapes
    stride, padding = int(p["stride"]), int(p["padding"])
    result = [n, c, out_dim(h, r, stride, padding), out_dim(w, s, stride, padding)]
    agree = [(c, c2, "the channels of the image (dimension 2) and of the filters (dimension 1)")]
    return result, agree


def loops(rank, p):
    """Loop names for schedules: the result's dimensions, then the reductions."""
    return ["n", "c", "y", "x", "r", "s"]


def domain(shapes, p):
    """The extent of each loop, in `loops` order."""
    result, _ = shape(shapes, p)
    (_, r, s) = shapes[1]
    return [*result, r, s]


SPEC = NamedOpSpec(
    "depthwise_conv2d",
    2,
    "one filter per channel: O[n, c, y, x] += I[n, c, st*y + r - p, st*x + s - p] * K[c, r, s]",
    shape,
    params={
        "stride": Param("int", 1, help="step between output pixels", minimum=1),
        "padding": Param("int", 0, help="zero padding on every side of the image", minimum=0),
    },
    ranks=(4, 3),
    loops_fn=loops,
    domain_fn=domain,
)


def generalize(gen):
    """The fills, allocs and generics computing `gen.op`: a contraction over a padded image."""
    gen.expect_loops(6)
    n, c, y, x, r, s = loop_dims(6)
    stride = int(gen.op.param("stride", 1))
    padding = int(gen.op.param("padding", 0))
    image, filters = gen.op.ins
    if padding:
        image = gen.pad_input(image, padding, spatial=[2, 3])
    gen.contraction(
        [[n, c, y * stride + r, x * stride + s], [c, r, s]],  # I[n, c, st*y + r, st*x + s], K[c, r, s]
        [n, c, y, x],  # O[n, c, y, x]
        2,  # the last two loops, r and s, are reductions
        ins=[image, filters],
    )


register_named_op(NamedOperation(SPEC, generalize=generalize))
