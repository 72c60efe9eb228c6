"""kube-apiserver's RBAC authorizer as pure functions of roles and bindings.

`rules` matches one request against one PolicyRule; `authorizer` finds the rules that apply to
a user and decides; `escalation` checks that a writer holds every permission a role or binding
would grant; `aggregation` computes aggregated ClusterRoles; `bootstrap` holds the default roles.
Nothing here reads the store or the network: the API server passes a `Policy` snapshot in.
"""
