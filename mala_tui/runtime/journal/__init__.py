"""A run's journal: one event a line, written as it happens and read back whole."""
