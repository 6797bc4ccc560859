"""``python -m checks.mutation``: mutation testing of the checks' teaching (see cli.py)."""

import sys

from checks.mutation.cli import main

sys.exit(main())
