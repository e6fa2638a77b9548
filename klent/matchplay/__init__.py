"""Matches between engine programs: klent as a *client* of GTP and UCI engines (GNU Go,
Stockfish, Fairy-Stockfish, `klent gtp`/`klent uci` themselves), where `klent/protocols/` is klent as
the server of those protocols.  `klent match`, `klent openings`, teacher labelling and the
anchor evaluation all drive engines through this package."""
