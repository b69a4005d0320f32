"""Word outside the browser: approval events sent to webhooks, Slack and email.

An event (a new request, an escalation, a request about to expire, a settlement)
writes one delivery row per matching channel in the same transaction as the event
itself (an outbox), so a committed event is never left unsent and a rolled-back one
never sends. Workers deliver the rows, retrying with backoff; the health page shows
what could not be delivered.
"""
