"""The reference semantics under its first name: everything public of `irkit.oracle`.

The oracle was one module, `irkit.reference`; it is now the package
`irkit.oracle`, a module per job.  This name stays for code written against
it (plugins, notebooks, the tests of the oracle itself).
"""

from __future__ import annotations

from irkit import oracle as _oracle
from irkit.oracle import *  # noqa: F403 -- the same names, under the old module name

__all__ = list(_oracle.__all__)
