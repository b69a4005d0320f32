"""Analytics (opt-in): ``metrics_query``, ``chart_render`` and ``report_build``."""
