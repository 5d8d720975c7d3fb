"""Tutorial chapter 3, aside: a reference with a bug, to see what a failing check says.

Use it instead of depthwise.py (`--plugin examples/tutorial/ch3/wrong_reference.py`): it
loads depthwise.py, then registers the operation again with a reference that computes a
convolution as signal-processing textbooks define it, with the filter flipped, where the
operation (like conv2d) is a cross-correlation.
"""

import importlib.util
from pathlib import Path

import numpy as np

from irkit.extend import NamedOperation, register_named_op

_spec = importlib.util.spec_from_file_location("tutorial_ch3_depthwise", Path(__file__).with_name("depthwise.py"))
depthwise = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(depthwise)


def flipped_reference(operands, p, acc):
    image, filters = (a.astype(acc) for a in operands)
    filters = filters[:, ::-1, ::-1]  # the bug: K[c, R - 1 - r, S - 1 - s]
    stride, padding = int(p["stride"]), int(p["padding"])
    image = np.pad(image, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    _, _, h, w = image.shape
    _, r, s = filters.shape
    oh, ow = (h - r) // stride + 1, (w - s) // stride + 1
    out = np.zeros((image.shape[0], image.shape[1], oh, ow), acc)
    for i in range(r):
        for j in range(s):
            window = image[:, :, i : i + stride * oh : stride, j : j + stride * ow : stride]
            out += window * filters[None, :, i, j, None, None]
    return out


register_named_op(
    NamedOperation(depthwise.SPEC, generalize=depthwise.generalize, reference=flipped_reference),
    replace=True,
)
