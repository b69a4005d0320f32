"""The opt-in communication tools: ``send_email`` and ``slack_post``."""
