"""Does it learn: held-out figures during and after pretraining, recipes, the paper's experiments."""
