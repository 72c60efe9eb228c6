"""Queued jobs: the Workload each needs, suspend and resume, and a framework Job's own objects."""
