"""Patches of the local cluster: strategic merge, server-side apply and the managedFields they keep."""
