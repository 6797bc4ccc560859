"""``python -m checks.regrade``: the same as ``python -m checks regrade``."""

import sys

from checks.regrade.cli import main

sys.exit(main())
