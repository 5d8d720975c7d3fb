"""Measure, check, measure again what fails, and leave out what still fails.

The calibration's figures go through three rounds (`run_checked`):

1. every step runs once (`irkit.calibrate.measure.run_steps`), the one-core
   memory bandwidths and the C library's exp once more at the end
   (`look_again`: the faster look kept), the written values are derived
   and checked (`irkit.calibrate.plausible`);
2. the steps behind every failing figure run again (a check fails mostly
   because another guest's work slowed one trial: a second measurement is
   the cheap cure), and everything is derived and checked again;
3. what still fails is resolved (`resolve`): an optional figure is left out
   of the description, with a warning naming it (on stderr and as a
   comment in the file); the clock, which a description needs, falls back
   to a clock the system states (the TSC's rate, cpufreq, /proc/cpuinfo),
   said so in a warning, and every figure in cycles is derived and checked
   again with it; a required bandwidth stays, with a warning, only while the
   description checker would accept it (an inverted pair within its 1.5 x
   noise margin) -- beyond that calibrate stops with an error rather than
   write it.

Steps are plain callables, so a test injects measurements by giving steps
that return fixed `Result`s (`irkit.calibrate.measure.figure`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from irkit.calibrate import CalibrateError, plausible
from irkit.calibrate.measure import Progress, Result, Step, run_step, run_steps
from irkit.calibrate.plausible import Context, Problem


@dataclass
class Checked:
    """The outcome: values to write, the raw results, and what the checks did."""

    values: dict[str, float]
    results: dict[str, Result]
    warnings: list[str] = field(default_factory=list)
    left_out: dict[str, str] = field(default_factory=dict)  # figure -> why
    again: list[str] = field(default_factory=list)  # steps measured a second time
    clock_source: str = ""  # where `frequency` came from when not measured (a fallback)
    first_problems: list[Problem] = field(default_factory=list)


# Throughputs that a neighbour's burst of a few seconds slows in every trial of their step (on the
# 2-vCPU Zen 4 guest the L1's bandwidth read 237 GB/s in all 9 trials of one calibration, 326-328
# in the others; the C library's exp 37% low in another): each is measured a second time once the
# other steps have run, tens of seconds later, and the faster look is kept -- a throughput's best
# trial, as everywhere, now over two moments instead of one.
SECOND_LOOK = ("L1.bandwidth", "L2.bandwidth", "L3.bandwidth", "libm_exp_f32", "libm_exp_f64")


def second_look(key: str) -> bool:
    return key in SECOND_LOOK or key.startswith("L1.bandwidth_")


def look_again(steps: list[Step], progress: Progress, results: dict[str, Result]) -> None:
    """Measure the `second_look` throughputs again; keep the faster of the two looks (both looks'
    samples kept)."""
    for step in steps:
        first = results.get(step.key)
        if first is None or not second_look(step.key) or first.statistic != "best":
            continue
        run_step(step, progress, results, again=True)
        later = results.get(step.key)
        if later is None or later.value < first.value:
            later_samples = later.samples if later is not None else []
            results[step.key] = replace(first, samples=[*first.samples, *later_samples])
        else:
            results[step.key] = replace(later, samples=[*first.samples, *later.samples])


def run_checked(steps: list[Step], progress: Progress, ctx: Context) -> Checked:
    """Run `steps`, take a second look at the fragile throughputs, check the figures, run again
    what fails, and resolve what still fails."""
    results = run_steps(steps, progress)
    look_again(steps, progress, results)
    values = plausible.derive(results, ctx)
    first = plausible.check(values, ctx)
    again: list[str] = []
    if first:
        wanted = {key for p in first for key in p.again}
        for p in first:
            progress.note(f"check failed: {p.message}; measuring again")
        for step in steps:
            if step.key in wanted:
                run_step(step, progress, results, again=True)
                again.append(step.key)
        values = plausible.derive(results, ctx)
    outcome = resolve(results, values, plausible.check(values, ctx), ctx)
    outcome.again, outcome.first_problems = again, first
    return outcome


def resolve(results: dict[str, Result], values: dict[str, float], problems: list[Problem], ctx: Context) -> Checked:
    """What to write when `problems` remain after measuring again (see the module docstring)."""
    out = Checked(values, results)
    if any(p.figure == "frequency" for p in problems):
        failed = "; ".join(p.message for p in problems if p.figure == "frequency")
        stated = plausible.fallback_clock(values, ctx)
        if stated is None:
            raise CalibrateError(
                f"frequency failed its checks twice ({failed}) and the system states no clock to fall back on; "
                "rerun on a quiet machine"
            )
        where, hz = stated
        out.clock_source = f"{where}'s rate, not measured"
        out.warnings.append(
            f"frequency: {failed}; measured twice, it is not written: frequency is {where}'s {hz / 1e9:.4g} GHz "
            "instead (a stated clock, maybe not the one a busy core runs at), and the figures in cycles use it"
        )
        values = plausible.derive(results, ctx, clock=hz)
        problems = [p for p in plausible.check(values, ctx) if p.figure != "frequency"]
        out.values = values
    needed = plausible.required(ctx)
    for p in problems:
        if p.figure in needed:
            if p.hard:
                raise CalibrateError(
                    f"{p.figure} failed its check twice ({p.message}), beyond what the description checker accepts; "
                    "the host is too busy to calibrate: rerun on a quiet machine"
                )
            out.warnings.append(f"{p.figure}: {p.message} (measured twice; kept: within a noisy host's margin)")
            continue
        if p.figure in out.left_out or p.figure not in out.values:
            continue
        del out.values[p.figure]
        out.left_out[p.figure] = p.message
        out.warnings.append(f"{p.figure} left out: {p.message} (measured twice)")
        for other in plausible.dependents(p.figure, ctx):
            if out.values.pop(other, None) is not None:
                out.left_out[other] = f"derived from {p.figure}, which is left out"
                out.warnings.append(f"{other} left out with {p.figure}")
    return out
