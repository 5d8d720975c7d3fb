"""Schedule directives, one record per kind (`irkit.directives.record.Directive`).

Each module of this package is one directive of the design language: its
record says how it is built from the grammar, printed, read back when
raising, replayed by name (checker and comparison), which choices it offers
a tuner, and which module applies it to loop IR.  Importing this package
registers them all in `irkit.registry.DIRECTIVE_RECORDS`; each directive's design op
(`SplitOp`, ...) is defined in its module and exported here.
"""

from __future__ import annotations

from irkit.directives import (  # noqa: F401 -- each registers its record
    compute_at,
    compute_root,
    interchange,
    pack,
    parallel,
    reorder,
    split,
    tile,
    unroll,
    unroll_jam,
    vectorize,
)
from irkit.directives.compute_at import ComputeAtOp
from irkit.directives.compute_root import ComputeRootOp
from irkit.directives.interchange import InterchangeOp
from irkit.directives.pack import PackOp
from irkit.directives.parallel import ParallelOp
from irkit.directives.record import (
    PLACE,
    SHAPE,
    Directive,
    Entry,
    Space,
    directive_op,
    directive_text,
    entry_of,
    entry_of_row,
    record_for,
    record_of,
    register,
)
from irkit.directives.reorder import ReorderOp
from irkit.directives.split import SplitOp
from irkit.directives.tile import TileOp
from irkit.directives.unroll import UnrollOp
from irkit.directives.unroll_jam import UnrollJamOp
from irkit.directives.vectorize import VectorizeOp

__all__ = [
    "ComputeAtOp",
    "ComputeRootOp",
    "InterchangeOp",
    "PackOp",
    "ParallelOp",
    "ReorderOp",
    "SplitOp",
    "TileOp",
    "UnrollJamOp",
    "UnrollOp",
    "VectorizeOp",
    "PLACE",
    "SHAPE",
    "Directive",
    "Entry",
    "Space",
    "directive_op",
    "directive_text",
    "entry_of",
    "entry_of_row",
    "record_for",
    "record_of",
    "register",
]
