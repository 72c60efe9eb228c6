"""Quota admission with Kueue's semantics (DESIGN.md 7.1): the cycle, flavors, preemption, status."""
