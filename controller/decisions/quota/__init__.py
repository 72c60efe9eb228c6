"""Quota admission with Kueue's semantics (docs/quota.md): the cycle, flavors, preemption, status."""
