"""irkit's benchmarks against peers: `python -m bench` writes BENCHMARKS.md and bench/results.json.

    python -m bench                      # every benchmark, full sizes
    python -m bench --quick              # tiny sizes, few repeats (the smoke test)
    python -m bench --only gemm,blur --repeat 9 --out /tmp/B.md
    python -m bench.tune                 # irkit tune vs the hand schedules and peers: TUNING.md (bench/tune.py)

Each benchmark compiles a document of `bench/documents/` with irkit, runs it
and its peers (numpy/OpenBLAS, Halide, a C STREAM kernel) once to check that
they agree, then times them alternately -- irkit, peer, irkit, peer, ... --
on preallocated buffers with the same thread count, and reports medians.

This module imports nothing heavy: thread-count variables must be set
(`bench.cli`) before numpy, OpenBLAS, OpenMP or Halide are loaded.
"""
