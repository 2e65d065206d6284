"""`python -m freshness_tracker` works like the `freshness-tracker` command."""

import sys

from freshness_tracker.cli import main

sys.exit(main())
