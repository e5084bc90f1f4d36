"""A run: its supervisor and how it is launched, resumed and stopped, its budgets,
profiles and permission requests, and its record."""
