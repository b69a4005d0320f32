"""The opt-in deployment tools: CI pipelines through a connection, and allowlisted
containers on a configured Docker engine."""
