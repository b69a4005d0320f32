"""Built-in tools: each a typed contract plus a run function that works through a sandbox."""
