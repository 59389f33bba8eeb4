"""`python -m trainjobs.cli`: the `trainjobs` command without its entry point."""

import sys

try:
    from trainjobs.cli import main
except KeyboardInterrupt:  # Ctrl-C before the command line could even load
    print("interrupted", file=sys.stderr)
    sys.exit(130)

sys.exit(main())
