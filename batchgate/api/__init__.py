"""Typed models parsed once from wire dicts, with field-path errors for bad input."""
