"""Answering the authorization rules' questions (webhook/rules/authorization.py) on the request
path: a short-lived answer cache, and SubjectAccessReviews through the kubernetes client."""
