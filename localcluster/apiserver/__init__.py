"""The local cluster's API server: routing, the verbs, the write pipeline (defaulting, pruning,
validation, admission, storage), watches and the admission webhooks it calls. The verb modules
take a `ServerState`; only `server` puts them together."""
