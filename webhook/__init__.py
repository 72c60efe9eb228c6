"""The admission gateway: a mutating + validating webhook served by gunicorn over TLS."""
