"""Progress: task completions of teams, the score history, and what reports them."""
