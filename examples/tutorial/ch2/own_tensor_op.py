"""Tutorial chapter 2, aside: `depthwise_conv2d` with a tensorop op class of its own.

Use it instead of depthwise.py (`--plugin examples/tutorial/ch2/own_tensor_op.py`): it loads
depthwise.py, then registers the same operation again with a `tensorop.depthwise_conv2d`
whose verifier also checks the parameters, so that hand-written tensorop IR is checked too.
"""

import importlib.util
from pathlib import Path
from typing import ClassVar

from xdsl.irdl import irdl_op_definition
from xdsl.utils.exceptions import VerifyException

from irkit.dialects.tensorop import NamedTensorOp, memref_rank
from irkit.extend import NamedOperation, register_named_op

_spec = importlib.util.spec_from_file_location("tutorial_ch2_depthwise", Path(__file__).with_name("depthwise.py"))
depthwise = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(depthwise)  # registers the operation with the class made from `ranks`


@irdl_op_definition
class DepthwiseConv2dOp(NamedTensorOp):
    """O[n, c, y, x] += I[n, c, st*y + r - p, st*x + s - p] * K[c, r, s]; params stride, padding."""

    name = "tensorop.depthwise_conv2d"
    ARITY: ClassVar[int] = 2  # two inputs, then one output

    def verify_ranks(self) -> None:
        if [memref_rank(v) for v in (*self.ins, *self.outs)] != [4, 3, 4]:
            raise VerifyException("tensorop.depthwise_conv2d expects operands of ranks [4, 3, 4]")
        if int(self.param("stride", 1)) < 1 or int(self.param("padding", 0)) < 0:
            raise VerifyException("tensorop.depthwise_conv2d needs stride >= 1 and padding >= 0")


register_named_op(
    NamedOperation(depthwise.SPEC, generalize=depthwise.generalize, tensor_op=DepthwiseConv2dOp),
    replace=True,
)
