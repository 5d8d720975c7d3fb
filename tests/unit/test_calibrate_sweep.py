"""Effective capacities from a working-set sweep (irkit.calibrate.sweep), on synthetic curves."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from irkit.calibrate import sweep
from irkit.calibrate.detect import CacheLevel

KiB, MiB = 1024, 1024**2
CACHES = [CacheLevel(1, 32 * KiB, 64), CacheLevel(2, 1 * MiB, 64), CacheLevel(3, 32 * MiB, 64, shared=2)]


def curve(ends: list[int], speeds: list[float], largest: int = 128 * MiB) -> list[tuple[int, float]]:
    """A staircase: speed[i] up to ends[i], then the next; the last speed beyond (DRAM)."""
    out = []
    for f in sweep.footprints(CACHES, largest):
        level = next((i for i, end in enumerate(ends) if f <= end), len(ends))
        out.append((f, speeds[level]))
    return out


def test_footprints_ascend_in_whole_elements_up_to_the_largest():
    points = sweep.footprints(CACHES, 128 * MiB)
    assert points == sorted(set(points))
    assert all(p % (sweep.ELEMENT * sweep.ALIGN) == 0 for p in points)
    assert points[0] <= 8 * KiB and points[-1] == sweep.elements(128 * MiB) * sweep.ELEMENT
    fine = [p for p in points if 32 * KiB <= p < 2 * MiB]  # below, whole 3 KiB elements make coarser steps
    assert all(b / a <= 2 ** (1 / 4) * 1.2 for a, b in zip(fine, fine[1:]))  # 4 an octave up to 2 x L2


def test_a_vm_whose_l3_ends_early():
    """/sys says 32 MiB of L3; the guest keeps L3 speed to 12 MiB: the effective size says 12."""
    points = curve([32 * KiB, 1 * MiB, 12 * MiB], [300e9, 110e9, 90e9, 20e9])
    caps = {c.level: c for c in sweep.effective_sizes(points, CACHES)}
    assert caps["L1"].effective == 32 * KiB
    assert 0.8 * MiB <= caps["L2"].effective <= 1 * MiB
    assert 10 * MiB <= caps["L3"].effective <= 14 * MiB
    assert caps["L3"].size == 32 * MiB  # the reported size is kept beside it


def test_noise_dips_do_not_end_a_level():
    """A slow point inside a plateau is noise (a larger footprint later runs faster); only a dip on a
    level's very last point can move its end, by at most one step of the sweep."""
    points = curve([32 * KiB, 1 * MiB, 12 * MiB], [300e9, 110e9, 90e9, 20e9])
    noisy = [(f, bw * (0.5 if i % 3 == 1 and f < 8 * MiB else 1.0)) for i, (f, bw) in enumerate(points)]
    clean = sweep.effective_sizes(points, CACHES)
    for a, b in zip(sweep.effective_sizes(noisy, CACHES), clean):
        assert b.effective / 1.2 <= a.effective <= b.effective


def test_two_levels_at_one_speed_have_no_step_to_find():
    points = curve([32 * KiB, 1 * MiB, 12 * MiB], [300e9, 100e9, 97e9, 20e9])
    caps = {c.level: c for c in sweep.effective_sizes(points, CACHES)}
    assert caps["L2"].effective is None and "no step" in caps["L2"].note
    assert caps["L3"].effective is not None


def test_a_speed_held_past_the_reported_size_is_held_to_it():
    points = curve([48 * KiB, 1 * MiB, 12 * MiB], [300e9, 110e9, 90e9, 20e9])
    (l1, *_) = sweep.effective_sizes(points, CACHES)
    assert l1.effective == 32 * KiB and "held to the reported size" in l1.note


def test_round_size_keeps_eight_steps_an_octave():
    assert sweep.round_size(30.4 * KiB) == 30 * KiB
    assert sweep.round_size(12.3 * MiB) == 12 * MiB
    assert sweep.round_size(1000) == 1024  # steps of 64 B between 512 and 1024
    for n in (5000, 77777, 3 * MiB + 12345):
        step = 2 ** (math.floor(math.log2(n)) - 3)
        assert sweep.round_size(n) % step == 0 and abs(sweep.round_size(n) - n) <= step / 2


@settings(max_examples=60, deadline=None)
@given(
    l3_end=st.integers(2 * MiB, 30 * MiB),
    ratio=st.floats(1.3, 6.0),
)
def test_the_effective_l3_is_found_within_the_sweeps_resolution(l3_end, ratio):
    points = curve([32 * KiB, 1 * MiB, l3_end], [300e9, 110e9, 90e9, 90e9 / ratio])
    l3 = sweep.effective_sizes(points, CACHES)[2]
    assert l3.effective is not None
    assert l3_end / 2 ** (1 / 3) / 1.15 <= l3.effective <= l3_end * 2 ** (1 / 3) * 1.15


def test_in_dram_needs_a_flat_octave_well_below_l3():
    points = curve([32 * KiB, 1 * MiB, 12 * MiB], [300e9, 110e9, 90e9, 20e9])
    upto = [p for p in points if p[0] <= 40 * MiB]
    assert sweep.in_dram(upto, CACHES)
    assert not sweep.in_dram([p for p in points if p[0] <= 10 * MiB], CACHES)


@pytest.mark.parametrize("footprint", [10 * KiB, 3 * MiB])
def test_elements(footprint):
    n = sweep.elements(footprint)
    assert n % sweep.ALIGN == 0 and n * sweep.ELEMENT <= max(footprint, sweep.ALIGN * sweep.ELEMENT)


def test_an_end_too_early_is_not_believed():
    """A sweep whose L2 speed 'ends' at 64 KiB (a slow L1 loop made L1 look like L2) gives no L2 size:
    the L2 bandwidth would otherwise be measured inside L1."""
    points = curve([32 * KiB, 64 * KiB, 12 * MiB], [300e9, 150e9, 110e9, 20e9])
    caps = {c.level: c for c in sweep.effective_sizes(points, CACHES)}
    assert caps["L2"].effective is None and "not believed" in caps["L2"].note
    shared = [CacheLevel(1, 32 * KiB, 64), CacheLevel(2, 1 * MiB, 64), CacheLevel(3, 32 * MiB, 64, shared=2)]
    points = curve([32 * KiB, 1 * MiB, int(1.2 * MiB)], [300e9, 110e9, 90e9, 20e9])
    assert sweep.effective_sizes(points, shared)[2].effective is None  # L3 ending within 1.5 x L2
