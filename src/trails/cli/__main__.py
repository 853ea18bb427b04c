"""``python -m trails.cli``: the same as the ``trails`` command."""

import sys

from trails.cli import main

sys.exit(main())
