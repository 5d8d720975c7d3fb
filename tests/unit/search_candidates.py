"""The schedules the tuner's search proposes for a document: legal schedules of every kind the
directive records offer, which the no-false-alarm tests of verification run over."""

from __future__ import annotations

from pathlib import Path


def candidate_documents(path: Path, sizes: dict[str, int], *, width: int, depth: int, keep: int, seed: int):
    """(stage, schedule text, the document with that stage's schedule) for each candidate the beam
    search keeps, stage by stage."""
    from irkit.frontend import build_design
    from irkit.perf.hardware import hardware_of_module
    from irkit.tune.estimate import Machine
    from irkit.tune.search import beam_search
    from irkit.tune.stages import read_kernel
    from irkit.validate.suite import replace_schedules

    text = path.read_text()
    kernel = read_kernel(text, str(path), sizes)
    module, _ = build_design(text, str(path))
    machine = Machine.of(hardware_of_module(module, str(path)))
    out = []
    for stage in kernel.stages:
        reads = kernel.reads.get(stage, ())
        for s in beam_search(stage, [kernel], reads, machine, width=width, depth=depth, keep=keep, seed=seed):
            out.append((stage, s.text, replace_schedules(text, {stage: s.candidate.texts})))
    return out
