"""Questline: teams, learning disciplines, progress, leaderboards and progress graphs."""

__version__ = "0.1.0"
