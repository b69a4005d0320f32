"""Sign-in with a password, throttled: django-axes' backend and middleware, the console's
counts and locks in Redis (per account from one address, and per address), every failure
audited within the per-client budget of refusals."""
