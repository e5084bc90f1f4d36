"""Helpers shared by every test tier: waiting, supervisors, terminals, sample events."""
