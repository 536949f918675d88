"""``python -m bench.platform``: see ``bench.platform.run``."""

from bench.platform.run import main

raise SystemExit(main())
