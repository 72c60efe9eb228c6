"""CA and serving certificates for the gateway and the local cluster."""
