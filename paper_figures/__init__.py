"""Scripts that reproduce the paper's figures, one per figure; each runs on its own."""
