"""One module per `klent` subcommand: ``add_arguments(parser)`` and ``run(args) -> int``."""
