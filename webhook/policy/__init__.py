"""Holding the policy the rules read: from a file or the ConfigMap, swapped atomically on change."""
