"""Console pages for 403, 404, 405 and 500: the console's layout, what happened, a way back.

Under /api/ and /mcp/ the error envelope answers instead (synthorg_site.http_edge); these
pages only ever reach a browser.
"""
