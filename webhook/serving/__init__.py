"""Serving the gateway: the flask app, gunicorn workers, TLS, audit lines and metrics."""
