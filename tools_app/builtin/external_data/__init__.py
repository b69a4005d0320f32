"""External data: ``external_data_request`` through a configured connection."""
