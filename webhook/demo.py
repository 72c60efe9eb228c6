"""`batchgate demo` now lives in demo/main.py; this name forwards there until cli.py points at it."""

from demo.main import main

__all__ = ["main"]
