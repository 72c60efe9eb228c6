"""`batchgate migrate`: taking over a live cluster from Kueue and the AppWrapper controller.

plan.py decides (pure: what the cluster holds -> what is taken over, what cannot be, what
blocks); steps.py orders the work so that two admission controllers never act on the same
objects; cli.py reads the cluster and carries the steps out.
"""
