"""Everything needed to play: rules, the network evaluator, search and the player facade.

numpy, onnxruntime and python-chess only; never torch, never the protocols or the server.
"""
