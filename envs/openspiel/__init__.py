"""Two-player zero-sum OpenSpiel games (Kuhn and Leduc poker, Goofspiel, Liar's Dice, matrix games)
behind the suite's batched two-seat interface. ``open_spiel`` is imported only when a game is built."""

from .game import INSTALL_HINT, OpenSpielGame, import_pyspiel, load_two_player_zero_sum

__all__ = ["INSTALL_HINT", "OpenSpielGame", "import_pyspiel", "load_two_player_zero_sum"]
