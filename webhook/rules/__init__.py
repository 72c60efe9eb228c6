"""Pure admission rules: what the gateway changes and what it rejects.

No flask, no kubernetes client, no clock: a rule is a function of the request and the policy.
"""
