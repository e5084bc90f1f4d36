"""`python -m mala_tui` runs the command line."""

from mala_tui.cli import main

raise SystemExit(main())
