"""Small helpers every layer may use (standard library and numpy only): atomic file writes, seeds."""
