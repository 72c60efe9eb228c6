"""The edge to the Kubernetes API shared by every process: the REST client and list + watch."""
