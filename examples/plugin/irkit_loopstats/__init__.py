"""irkit-loopstats: an example out-of-tree irkit plugin.

- `irkit_loopstats.dialect`: the `loopstats` dialect (one op, `loopstats.summary`);
- `irkit_loopstats.annotate`: the `loopstats-annotate` pass that inserts it;
- `irkit_loopstats.universe`: the `xdsl.universe` entry point through which
  `irkit-opt` and `xdsl-opt` find both.

Importing this package imports nothing else: the tools load the dialect
and the pass through the factories in `universe` only when they need them.
"""
