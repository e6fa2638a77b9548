"""Move selection: reactive (one network call) and Gumbel MCTS."""
