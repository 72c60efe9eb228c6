"""`kubectl batchgate`: the plugin's verbs, as pure decisions (args, tables, patches, `why`) and one I/O edge (cli)."""
