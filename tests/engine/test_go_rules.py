"""Go's move rules (klent/engine/go_rules.py) and the board facts behind them (klent/engine/go_board.py), as
the `Player` applies them in every mode, with scripted networks that want to pass or to fill
their own eye whatever the position."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from klent.engine import games, go_board
from klent.engine.games.base import Game, State
from klent.engine.games.go import GoGame
from klent.engine.network import Evaluation, apply_legal_mask
from klent.engine.player import MoveRule, Player, PlayOptions

MODES = [PlayOptions(mode="reactive"), PlayOptions(mode="search", simulations=16)]
DEAD_STONES_BLACK = [f"E{row}" for row in range(1, 10)] + ["A2", "A3", "B4", "C3", "D2", "B1"]
DEAD_STONES_WHITE = [f"F{row}" for row in range(1, 10)] + ["B2", "C2", "B3"]


class ScriptedGoNetwork:
    """A Go 'network' whose policy favours ``favourite`` (a vertex, "pass" by default) in every
    position so strongly that a short search chooses it too, whose action values are ``bonus``
    for that move and 0 for the others, and whose ownership head (when ``black_owns_left``)
    gives Black columns A-E and White F-J.  Counts the states it evaluates."""

    def __init__(
        self, game: GoGame, favourite: str = "pass", bonus: float = 0.0, black_owns_left: bool = False
    ) -> None:
        self.game: Game = game
        self.go = game
        self.favourite = game.parse_vertex(favourite)
        self.bonus = bonus
        self.black_owns_left = black_owns_left
        self.evaluated = 0

    def evaluate(self, states: Sequence[State]) -> Evaluation:
        self.evaluated += len(states)
        size = len(states), self.game.num_actions
        logits, q = np.zeros(size, np.float32), np.zeros(size, np.float32)
        logits[:, self.favourite], q[:, self.favourite] = 100.0, self.bonus
        logits, q = apply_legal_mask(logits, q, np.stack([s.legal_mask() for s in states]))
        ownership = None
        if self.black_owns_left:
            black = np.where(np.arange(self.go.size) <= 4, 1.0, -1.0)[None, :].repeat(self.go.size, 0)
            ownership = np.stack([black * (1 if s.to_play == 0 else -1) for s in states]).astype(np.float32)
        return Evaluation(logits, q, None, ownership)


def player_at(network: ScriptedGoNetwork, moves: Sequence[str] = (), black: Sequence[str] = (),
              white: Sequence[str] = (), to_play: int = 0) -> Player:
    game = network.go
    start = game.setup_state([game.parse_vertex(v) for v in black], [game.parse_vertex(v) for v in white], to_play)
    player = Player(network, seed=1)
    player.set_position(start, [game.parse_vertex(v) for v in moves])
    return player


@pytest.mark.parametrize("options", MODES, ids=lambda o: o.mode)
def test_a_pass_that_loses_becomes_an_attack(options: PlayOptions) -> None:
    """White, behind on the board, does not pass after Black's E5; the network would."""
    network = ScriptedGoNetwork(GoGame(9))
    player = player_at(network, ["E5"])
    decision = player.decide(options)
    assert decision.move in {"D5", "F5", "E4", "E6"} and decision.rule is MoveRule.CLEANUP
    assert decision.top_moves[0].move == decision.move and decision.pv[0] == decision.move
    assert player.decide(replace(options, go_rules=False)).move == "pass"
    # Nothing to attack and nothing of ours to save: the pass stands.
    assert player_at(network).decide(options).move == "pass"


@pytest.mark.parametrize("options", MODES, ids=lambda o: o.mode)
def test_a_won_game_ends_with_a_pass_at_once(options: PlayOptions) -> None:
    network = ScriptedGoNetwork(GoGame(9), favourite="A1")
    player = player_at(network, ["E5", "pass"])  # B+73.5 as the board stands
    decision = player.decide(options)
    assert decision.move == "pass" and decision.rule is MoveRule.PASS_WINS and decision.simulations == 0
    cleanup = player.decide(replace(options, cleanup=True))
    assert cleanup.move == "A1" and cleanup.rule is None  # cleanup does not end the game


def test_cleanup_attacks_until_nothing_is_left() -> None:
    network = ScriptedGoNetwork(GoGame(9))
    decision = player_at(network, ["C3", "G7"]).decide(PlayOptions(mode="reactive", cleanup=True))
    assert decision.move in {"G8", "G6", "F7", "H7"} and decision.rule is MoveRule.CLEANUP
    assert player_at(network, black=["C3"]).decide(PlayOptions(mode="reactive", cleanup=True)).move == "pass"
    with pytest.raises(ValueError):
        PlayOptions(go_rules=False, cleanup=True)


def test_own_eyes_are_filled_only_for_a_clear_gain() -> None:
    eye = ["B1", "A2", "B2"]  # A1 is Black's eye; Black owns the board
    game = GoGame(9)
    filling = player_at(ScriptedGoNetwork(game, favourite="A1"), black=eye).decide(PlayOptions(mode="reactive"))
    assert filling.move == "pass" and filling.rule is MoveRule.OWN_EYE
    worth_it_network = ScriptedGoNetwork(game, favourite="A1", bonus=0.2)
    worth_it = player_at(worth_it_network, black=eye).decide(PlayOptions(mode="reactive"))
    assert worth_it.move == "A1" and worth_it.rule is None


def test_a_group_the_referee_calls_dead_tries_to_live() -> None:
    """White's lone C3 wins the board's count, but it stands in Black's area by the ownership
    head, and without it the empty board wins for Black (komi -7.5).  With nothing of Black's
    to attack, White plays on elsewhere instead of passing."""
    network = ScriptedGoNetwork(GoGame(9, komi=-7.5), black_owns_left=True)
    decision = player_at(network, white=["C3"], to_play=1).decide(PlayOptions(mode="reactive"))
    assert decision.move != "pass" and decision.rule is MoveRule.RESCUE
    alive = player_at(network, white=["C3"], to_play=1).decide(PlayOptions(mode="reactive", judge_dead_stones=False))
    assert alive.move == "pass" and alive.rule is None


def test_the_judgement_is_asked_for_only_when_a_rule_needs_it() -> None:
    network = ScriptedGoNetwork(GoGame(9), favourite="D4", black_owns_left=True)
    player_at(network, ["E5"]).decide(PlayOptions(mode="reactive"))
    assert network.evaluated == 1  # the move itself, no ownership call


def test_the_referees_judgement() -> None:
    network = ScriptedGoNetwork(GoGame(9), black_owns_left=True)
    player = player_at(network, black=DEAD_STONES_BLACK, white=DEAD_STONES_WHITE)
    judgement = player.judged()
    game = network.go
    assert {game.vertex(p) for p in judgement.dead} == {"B2", "B3", "C2"}
    # By point: row 0 at the top.
    assert [[game.vertex(p) for p in chain] for chain in judgement.chains(dead=True)] == [["B3", "B2", "C2"]]
    assert sum(len(chain) for chain in judgement.chains(dead=False)) == len(DEAD_STONES_BLACK) + 9
    assert judgement.judged.score() == 45 - 36 - 7.5 and judgement.state.score() < 0
    player.options = PlayOptions(judge_dead_stones=False)
    assert not player.judged().dead and player.judged().judged is player.state
    with pytest.raises(TypeError):
        Player(SimpleNamespace(game=games.get("countup"))).judged()  # type: ignore[arg-type]


def test_an_analysis_searches_even_where_the_rules_would_pass_at_once() -> None:
    player = player_at(ScriptedGoNetwork(GoGame(9)), ["E5", "pass"])
    decision = player.analyse(lambda decision: False, threading.Event(), PlayOptions(simulations=16))
    assert decision.simulations > 0 and decision.rule is None


def test_own_eyes_self_atari_and_cleanup_points() -> None:
    game = GoGame(9)
    black = [game.parse_vertex(v) for v in ["B1", "A2", "B2", "C1", "C2", "D1"]]
    white = [game.parse_vertex(v) for v in ["E1", "E2", "J9"]]
    board = game.setup_state(black, white).board().ravel()
    a1, d2 = game.parse_vertex("A1"), game.parse_vertex("D2")
    assert go_board.is_own_eye(board, 9, a1, 1) and not go_board.is_own_eye(board, 9, a1, -1)
    assert go_board.is_self_atari(board, 9, a1, -1)  # White into Black's eye
    assert not go_board.is_self_atari(board, 9, d2, -1)
    stones_, liberties = go_board.chain_at(board, 9, game.parse_vertex("E1"))
    assert stones_ == {game.parse_vertex("E1"), game.parse_vertex("E2")}
    assert liberties == {game.parse_vertex(v) for v in ["F1", "F2", "E3", "D2"]}
    # Black's cleanup targets: every liberty of White's chains that is not self-atari for Black.
    expected = {game.parse_vertex(v) for v in ["F1", "F2", "E3", "D2", "H9", "J8"]}
    assert set(go_board.cleanup_points(board, 9, 1)) == expected
    # White J9-J8 and H7 around Black's H8: J7 would leave Black one liberty (J6), so it is no target.
    corner = game.setup_state([game.parse_vertex("H8")], [game.parse_vertex(v) for v in ["J9", "J8", "H7"]])
    targets = {game.vertex(p) for p in go_board.cleanup_points(corner.board().ravel(), 9, 1)}
    assert targets == {"H9", "G7", "H6"}
    # A false eye: two enemy stones on the diagonals of a centre point.
    centre = [game.parse_vertex(v) for v in ["E4", "D5", "F5", "E6"]]
    false_eye = game.setup_state(centre, [game.parse_vertex("D4"), game.parse_vertex("F6")]).board().ravel()
    assert not go_board.is_own_eye(false_eye, 9, game.parse_vertex("E5"), 1)
