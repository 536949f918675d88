"""Bulk team creation (experimental): many teams in one all-or-nothing request."""
