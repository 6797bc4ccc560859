"""``python -m checks.benchmark``: see checks/benchmark/__init__.py."""

import sys

from checks.benchmark.cli import main

sys.exit(main())
