"""`batchgate generate`: MLBatch's job generators, reimplemented as pure functions of their settings."""
