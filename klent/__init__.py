"""klent: a KLENT-trained board-game engine server (command line entry point)."""

__version__ = "0.1.0"
