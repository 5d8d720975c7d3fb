"""`irkit calibrate`: measure this host and write its hardware description.

The cost model prices kernels with figures from a hardware description
(DESIGN.md, contract 4: hardware is data).  The bundled `generic` profile
is a guess; this package measures the machine it runs on instead, with
microbenchmarks that irkit's own C backend builds, so the figures come from
the same compiler, flags and runtime (OpenMP, ctypes) that irkit's kernels
use.  One module per job:

- `detect`: what the machine says about itself -- cache levels from
  `/sys`, SIMD width and model from `/proc/cpuinfo`, the thread count from
  `OMP_NUM_THREADS` or the affinity mask;
- `kernels`: the C microbenchmarks and their ctypes signatures;
- `measure`: the driver -- array sizes chosen from the cache sizes, how
  many repetitions make a call long enough to time, best and median of
  several timed trials, progress;
- `writer`: the `hardware NAME { ... }` text, with units chosen per field.

`irkit.tools.calibrate` is the command line on top.  Problems a user can
fix (no compiler, an unreadable `/sys`, a bad `OMP_NUM_THREADS`) are
`CalibrateError`s, reported as one line.
"""

from __future__ import annotations


class CalibrateError(Exception):
    """A problem with the host or its set-up, reported as one line without a traceback."""
