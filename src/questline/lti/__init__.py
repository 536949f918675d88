"""LTI 1.3: Questline as a tool that learning platforms launch (docs/platforms.md)."""
