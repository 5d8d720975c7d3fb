"""Pass options with help text: what `irkit-opt --help-pass NAME` prints under each option.

A pass option is a dataclass field of the pass class (xDSL reads pipeline
options from the fields); `option` adds the help text as field metadata.
"""

from __future__ import annotations

import dataclasses
from typing import Any


def option(default: Any = dataclasses.MISSING, *, help: str) -> Any:
    """A pass option with `help`; without `default` the option is required in the pipeline."""
    if isinstance(default, list | dict | set):
        raise TypeError("pass options are immutable values: use a tuple instead of a list")
    return dataclasses.field(default=default, metadata={"help": help})
