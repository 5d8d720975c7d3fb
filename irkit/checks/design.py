"""Placeholder replaced below."""
def check_module(module):
    return []
