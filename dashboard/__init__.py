"""`batchgate dashboard`: a read-only live web view of queues, AppWrappers, nodes and gateway decisions.

`views/` turns observed objects into page data (pure, table-tested); `watch.py` keeps one set of
watches for every viewer; `app.py` serves the pages and the server-sent events.
"""
