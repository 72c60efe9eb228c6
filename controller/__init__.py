"""The reconcile controller: informers feed state, pure decisions, adapters act (docs/architecture.md)."""
