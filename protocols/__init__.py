"""Text protocols (GTP, UCI, the lichess bot bridge) on top of `engine.player`."""
