"""The one error the framework phases raise: a field path and what is wrong there."""

from __future__ import annotations

from batchgate.api.errors import FieldError


class FrameworkError(FieldError):
    """Bad framework input; the gateway turns it into a denial whose message names the field."""

    @property
    def message(self) -> str:
        return self.detail
