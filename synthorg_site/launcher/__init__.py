"""One process that starts the whole console and stops it whole."""
