"""Typed models parsed once from wire dicts."""
