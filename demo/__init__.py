"""`batchgate demo`: the composition of every process (local cluster, gateway, controller).

It lives outside webhook/, controller/ and localcluster/ because it is the one place that runs
them all together, the way an admin would on a real cluster.
"""
