"""Alternated timing for the benchmarks: the core lives in `irkit.timing` (bench is not installed, irkit is)."""

from irkit.timing import (
    MAX_BATCH,
    MAX_ROUNDS,
    MIN_ROUNDS,
    WARMUP_SECONDS,
    Plan,
    alternate,
    batch_size,
    rounds_for,
    settle,
    summary,
    time_call,
)

__all__ = [
    "MAX_BATCH",
    "MAX_ROUNDS",
    "MIN_ROUNDS",
    "WARMUP_SECONDS",
    "Plan",
    "alternate",
    "batch_size",
    "rounds_for",
    "settle",
    "summary",
    "time_call",
]
