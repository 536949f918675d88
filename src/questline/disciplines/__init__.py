"""Disciplines: ordered levels, quests and tasks (with points), and resources on any node."""
