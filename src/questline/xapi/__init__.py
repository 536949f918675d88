"""xAPI 1.0.3 statements of every completion, withdrawal and level or discipline
completion, sent through the outbox to each organization's learning record store."""
