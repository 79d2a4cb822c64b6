"""`python -m llmsim`: the command line (llmsim.cli)."""

import sys

from .cli import main

sys.exit(main())
