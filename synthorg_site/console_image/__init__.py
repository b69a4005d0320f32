"""The console's own container image (docker/console/), built without a registry."""
