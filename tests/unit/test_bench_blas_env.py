"""The benchmarks run numpy with its own BLAS kernel: an OPENBLAS_CORETYPE override is removed by a
re-run of the command (before OpenBLAS reads it), unless the user keeps it."""

from __future__ import annotations

import sys

import pytest

from bench import blas_env


@pytest.fixture
def execs(monkeypatch):
    calls = []
    monkeypatch.setattr(blas_env.os, "execve", lambda path, argv, env: calls.append((path, argv, env)))
    monkeypatch.setattr(sys, "argv", ["bench/tune.py", "--only", "gemm"])
    return calls


def test_no_override_no_rerun(monkeypatch, execs):
    for key in blas_env.OVERRIDES:
        monkeypatch.delenv(key, raising=False)
    blas_env.native_blas("bench.tune")
    assert execs == []


def test_override_is_removed_by_a_rerun(monkeypatch, execs):
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Haswell")
    monkeypatch.delenv("OPENBLAS_L2_SIZE", raising=False)
    monkeypatch.delenv("IRKIT_BENCH_BLAS_ENV", raising=False)
    blas_env.native_blas("bench.tune")
    [(path, argv, env)] = execs
    assert path == sys.executable
    assert argv == [sys.executable, "-m", "bench.tune", "--only", "gemm"]
    assert "OPENBLAS_CORETYPE" not in env
    monkeypatch.setenv(blas_env.REMOVED, env[blas_env.REMOVED])
    assert blas_env.removed() == {"OPENBLAS_CORETYPE": "Haswell"}


def test_keep_leaves_the_override(monkeypatch, execs):
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Haswell")
    monkeypatch.setenv("IRKIT_BENCH_BLAS_ENV", "keep")
    blas_env.native_blas("bench")
    assert execs == []


def test_removed_is_empty_without_a_rerun(monkeypatch):
    monkeypatch.delenv(blas_env.REMOVED, raising=False)
    assert blas_env.removed() == {}
