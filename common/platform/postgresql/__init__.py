"""PostgreSQL as the console uses it: Django's backend, with a connection pool that gets
over a server restart at once (``ENGINE = "common.platform.postgresql"``)."""
