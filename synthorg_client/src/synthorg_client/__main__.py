"""`python -m synthorg_client …`"""

from synthorg_client.cli import main

raise SystemExit(main())
