"""Text protocols (GTP, UCI, the lichess bot bridge) on top of `klent.engine.player`."""
