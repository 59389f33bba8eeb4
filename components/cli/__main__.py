"""`python -m components.cli`: the `trainjobs` command without its entry point."""

import sys

from components.cli import main

sys.exit(main())
