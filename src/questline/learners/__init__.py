"""Learners act themselves: answers, self-check, hints, sequential levels."""
