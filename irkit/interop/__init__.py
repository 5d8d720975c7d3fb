"""Interoperation with upstream xDSL: running irkit's exported loops in xDSL's own tools."""
