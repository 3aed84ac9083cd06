"""How fast: albert_tf against its peers in the same run, as ratios."""
