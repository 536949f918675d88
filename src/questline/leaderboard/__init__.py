"""Leaderboard: the ranking of an organization's teams and the progress graphs."""
