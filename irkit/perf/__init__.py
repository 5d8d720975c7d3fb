"""irkit's performance model: cost terms from loop IR, priced on a hardware description.

    from irkit.perf import load_hardware, predict
    p = predict("examples/gemm.design", sizes={"M": 2048, "N": 2048, "K": 2048}, hw=load_hardware("host.hw"))
    p.seconds, p.breakdown, p.bound

See docs/perf-model.md for the model and its assumptions.
"""

from irkit.perf.hardware import Hardware, load_hardware
from irkit.perf.predict import CostModel, Prediction, cost_model, predict

__all__ = ["CostModel", "Hardware", "Prediction", "cost_model", "load_hardware", "predict"]
