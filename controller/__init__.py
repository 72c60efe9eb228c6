"""The reconcile controller: informers feed state, pure decisions, adapters act (DESIGN.md 7)."""
