"""The `mala-tui` subcommands, one module each; cli.py only parses and dispatches."""
