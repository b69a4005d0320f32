"""Prometheus metrics of the console: what happens to calls, approvals, sandboxes and queues.

Counters and histograms are written by every process (web nodes and each Celery
prefork child) into files under ``PROMETHEUS_MULTIPROC_DIR`` and summed at scrape
time; what is a state rather than an event (pending approvals, queue depth,
workers seen) is read from the database and Redis when ``/metrics`` is scraped.
"""
