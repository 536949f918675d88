"""Seasons: time-boxed competitions ranked by the completions inside their window, with
an optional freeze that holds the standings still for members until the reveal."""
