"""`python -m irkit`: the same front door as the `irkit` command."""

import sys

from irkit.tools.cli import main

sys.exit(main())
