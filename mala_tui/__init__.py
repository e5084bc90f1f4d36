"""mala-tui: watch coding agents' context windows live and manage them."""

__version__ = "0.1.0"
