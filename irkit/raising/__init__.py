"""Raising: rebuilding what was asked from what was generated (loop -> tensorop -> design)."""
