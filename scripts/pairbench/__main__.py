"""`python3 -m pairbench` (with scripts/ on sys.path)."""

import sys

from pairbench.cli import main

sys.exit(main())
