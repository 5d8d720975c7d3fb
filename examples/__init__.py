"""The example design documents, installed with irkit as `irkit.examples` (see setup.py)."""
