"""Authentication: JWT bearer tokens carrying the caller's organization and role."""
