"""irkit's plugin for xDSL: `xdsl-opt` (and any `xDSLOptMain`) sees irkit's
dialects and passes once irkit is installed.

Declared in pyproject.toml as the `xdsl.universe` entry point `irkit`.  Every
value is a zero-argument factory that imports on first use, so a stock
`xdsl-opt` run that never touches irkit IR pays nothing for it.
"""

from __future__ import annotations

from xdsl.universe import Universe

from irkit.context import IRKIT_DIALECTS
from irkit.passes.registry import IRKIT_PASSES

IRKIT_UNIVERSE = Universe(all_dialects=IRKIT_DIALECTS, all_passes=IRKIT_PASSES)
