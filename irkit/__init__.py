"""irkit: design documents for compute kernels, lowered through xDSL dialects.

`irkit.compile(path_or_text, sizes=..., hw=...)` is the Python entry point
(see `irkit.api`); `irkit-opt` and `irkit` are the command-line tools.
"""

from __future__ import annotations

__all__ = ["compile"]


def compile(path_or_text, sizes=None, hw=None, cflags=None, **options):  # noqa: A001 - the API's name
    """Compile a design document to a callable kernel (see `irkit.api.compile`, which documents
    the keyword options: `name`, `build`)."""
    from irkit.api import compile as _compile

    return _compile(path_or_text, sizes=sizes, hw=hw, cflags=cflags, **options)
