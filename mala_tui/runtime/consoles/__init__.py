"""Consoles: a detached run's own host process, the control channel and its
sockets, a console's view of a live run, and notifications."""
