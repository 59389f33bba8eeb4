"""`python -m trainjobs.cli`: the `trainjobs` command without its entry point."""

import sys

from trainjobs.cli import main

sys.exit(main())
