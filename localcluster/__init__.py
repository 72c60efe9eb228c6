"""A stand-in kube-apiserver (and, with its controllers, a small cluster) in one process.

It plays Kubernetes for kubectl, the `kubernetes` client and the webhook, so it imports nothing
from the product (docs/architecture.md, "Layers and import rules").
"""
