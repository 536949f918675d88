"""Work a team's member submits for review, and the admin's decision on it."""
