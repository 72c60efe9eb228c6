"""The one error the framework phases raise: a field path and what is wrong there."""

from __future__ import annotations


class FrameworkError(ValueError):
    """Bad framework input; the gateway turns it into a denial whose message names the field."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message

