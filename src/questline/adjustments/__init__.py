"""Point adjustments: an admin's manual change of a team's score, with a reason."""
