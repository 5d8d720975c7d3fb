"""The plugin's `xdsl.universe` entry point (see pyproject.toml).

Both tools read it: `xdsl-opt` through xDSL's multiverse, `irkit-opt`
because its pass list and context include the multiverse.  Each value is a
zero-argument factory that imports on first use, so listing passes or
running an unrelated pipeline never imports the plugin's modules.
"""

from __future__ import annotations

from xdsl.universe import Universe


def _loopstats_dialect():
    from irkit_loopstats.dialect import LoopStats

    return LoopStats


def _loopstats_annotate():
    from irkit_loopstats.annotate import LoopStatsAnnotatePass

    return LoopStatsAnnotatePass


LOOPSTATS_UNIVERSE = Universe(
    all_dialects={"loopstats": _loopstats_dialect},
    all_passes={"loopstats-annotate": _loopstats_annotate},
)
