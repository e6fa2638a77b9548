"""Action-value distillation: fit the policy and Q heads to a teacher's labelled positions.

This is the `klent train --algo distill` algorithm, readable top to bottom:

1. `LabelledSet.load` replays the games of a labelled set (`klent.training.teacher`) once and keeps
   each stored position's observation (as bits, `klent.training.packed`) and its labels (ragged:
   legal action, value);
   `LabelledSet.join` puts sets side by side (a teacher's games and the student's, say);
2. `batches` walks the training positions in a fresh seeded permutation per epoch, so that
   iteration ``i`` of a run always sees the same positions and a resume is exact;
3. `to_samples` turns a chunk of positions into the trainer's `Samples`: the policy target is
   a softmax of the teacher's values at ``temperature`` (0: all mass on the best move), with
   ``best_weight`` of it moved onto the teacher's own move (`teacher_policy`), the
   action-value targets are the values themselves on every labelled move (NaN elsewhere);
4. `distill_loss` = CE(target, pi_theta) + q_weight * mean over labelled moves of
   (Q_theta(s, a) - Q_teacher(s, a))^2 -- Ruoss et al. 2024 regress every legal move's value;
5. `validation_metrics`: on the held-out games, top-1 agreement of pi_theta's choice with the
   teacher (its value is the best one: W - L values tie often, a thousandth apart at most), the
   regret of that choice (best value minus its value: what reactive play loses per move, by the
   teacher's reckoning) and of argmax Q_theta's choice (Ruoss et al. play that way), the mean
   squared Q error, and the share of *tactical* positions solved -- those where the teacher's
   best move is worth at least `TACTIC_GAP` more than any other (a mate, a winning capture, the
   only defence): a reactive player must find exactly that move;
6. `Distill`, the algorithm as the trainer runs it (`klent.training.algorithm.Algorithm`): each
   process fits its share of every iteration's positions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import torch
from pydantic import Field
from tqdm import tqdm

from klent.engine.games.base import Game, State
from klent.engine.games.go import GoGame
from klent.engine.settings import Float, Int, Str, section
from klent.training.fitting import Batch, Loss
from klent.training.klent_rl import masked_log_policy, q_squared_errors
from klent.training.nets import NetOutputs
from klent.training.ownership import final_targets
from klent.training.packed import PackedPlanes
from klent.training.selfplay import GameSlots, Samples
from klent.training.shards import LabelConfig, Manifest, read_shard, rules

TACTIC_GAP = 0.5  # best move's value minus the second best's, in W - L, for a "tactical" position


@section
class DistillConfig:
    """The ``[distill]`` section of a training config.  A KLENT run with ``data`` fits the
    action values of ``positions`` of its labelled positions an iteration beside its games, with
    weight ``q_weight`` (`klent.training.klent_rl.Klent`); the policy settings go unused there."""

    data: Str = ""  # folder of a labelled set (`klent distill label --out`); several: "A,B"
    temperature: Annotated[Float, Field(ge=0)] = 0.05  # of the policy target softmax(Q_teacher / T); 0: one-hot best
    q_weight: Annotated[Float, Field(ge=0)] = 1.0
    positions: Annotated[Int, Field(ge=1)] = 8192  # positions fitted per iteration
    score_scale: Annotated[Float, Field(ge=0)] = 0.0  # Go Q targets: 0 outcome, S tanh(score/S) (`go_q_targets`)
    teacher_value_weight: Annotated[Float, Field(ge=0, le=1)] = 0.0  # Go, outcome targets: share of the teacher's value
    best_weight: Annotated[Float, Field(ge=0, le=1)] = 0.0  # share of the policy target on the teacher's move


@dataclass
class LabelledSet:
    """Positions of a labelled set ready to fit: observations and ragged labels."""

    obs: PackedPlanes  # N observations of [C, H, W]
    legal: np.ndarray  # uint8[N, ceil(A / 8)]: the legal actions, np.packbits
    label_start: np.ndarray  # int64[N + 1]
    action: np.ndarray  # int64[L]
    value: np.ndarray  # float32[L]
    validation: np.ndarray  # bool[N]: from a validation game
    description: str = ""  # teacher, limits and size, for model provenance
    ownership: np.ndarray | None = None  # Go: int8[N, points], final owners from the mover's view
    score: np.ndarray | None = None  # Go: float32[N], final score in points from the mover's view
    value_scale: str = "outcome"  # what the values measure: "centipawns" for chess labelled with --value cp

    def __len__(self) -> int:
        return len(self.obs)

    @classmethod
    def load(cls, folder: str | Path, game: Game, progress: bool = True, score_scale: float = 0.0,
             teacher_value_weight: float = 0.0) -> LabelledSet:
        """Replay every game of the set at ``folder`` and encode its stored positions
        (``score_scale``, ``teacher_value_weight``: Go's Q targets, see `go_q_targets`)."""
        manifest = Manifest.read(Path(folder))
        if manifest is None:
            raise FileNotFoundError(f"{folder} holds no labelled set (run `klent distill label` first)")
        config = LabelConfig(**manifest.config)
        if config.game != game.name:
            raise ValueError(f"{folder} holds {config.game} positions, not {game.name}")
        obs = PackedPlanes.empty(manifest.positions, game.observation_shape)
        legal = np.empty((manifest.positions, (game.num_actions + 7) // 8), dtype=np.uint8)
        starts: list[np.ndarray] = []  # each shard's label starts, from 0
        actions, values, validation = [], [], []
        owners, scores = [], []  # Go
        replay = rules(config.game)
        row = 0
        bar = tqdm(total=manifest.positions, unit="pos", desc="encoding", disable=not progress)
        for name in manifest.shards:  # this manifest's shards: a labeller may be adding more
            shard = read_shard(Path(folder) / name)
            for _, game_index, state in shard_states(shard, replay):
                obs.put(row, game.encode(state))
                legal[row] = np.packbits(state.legal_mask())
                row += 1
                validation.append(config.is_validation(game_index))
            bar.update(len(shard["ply"]))
            # positions were visited game by game, which is their stored order within a shard
            if "teacher_action" in shard:
                # Go: the teacher's move is the policy target, its final ownership (dead stones
                # judged by the teacher) and score the auxiliary targets, and the Q targets
                # come from `go_q_targets`.
                assert isinstance(replay, GoGame)
                shard_scores = []
                for owner, ply in zip(shard["ownership"], shard["ply"]):
                    player = int(ply) % 2
                    black_view = owner * (1 if player == 0 else -1)
                    owned, score = final_targets(black_view, replay.komi, player)
                    owners.append(owned.astype(np.int8))
                    shard_scores.append(score)
                shard_starts, shard_actions, shard_values = go_q_targets(
                    shard, np.array(shard_scores), score_scale, teacher_value_weight)
                starts.append(shard_starts)
                actions.append(shard_actions)
                values.append(shard_values)
                scores.extend(shard_scores)
            else:
                starts.append(shard["label_start"])
                actions.append(shard["action"].astype(np.int64))
                values.append(shard["value"])
        bar.close()
        return cls(
            obs=obs.take(row),
            legal=legal[:row],
            label_start=joined_starts(starts),
            action=np.concatenate(actions) if actions else np.zeros(0, np.int64),
            value=np.concatenate(values) if values else np.zeros(0, np.float32),
            validation=np.array(validation, dtype=bool),
            ownership=np.array(owners, dtype=np.int8) if owners else None,
            score=np.array(scores, dtype=np.float32) if owners else None,
            value_scale="centipawns" if config.game == "chess" and config.value == "cp" else "outcome",
            description=f"{manifest.teacher_name}, {config.game}, "
            + (f"depth {config.depth}" if config.depth else f"nodes {config.nodes}" if config.nodes else "own level")
            + f", {manifest.positions} positions from {manifest.games} games",
        )

    @classmethod
    def join(cls, parts: list[LabelledSet]) -> LabelledSet:
        """The positions of ``parts`` (sets of one game, as `load` checks) as one set, each
        keeping its own split into training and validation games (sets labelled apart share no
        game)."""
        if len(parts) == 1:
            return parts[0]
        if len({part.value_scale for part in parts}) > 1:
            raise ValueError("these labelled sets value moves on different scales (centipawns and outcomes): "
                             "fit them apart")
        return cls(
            obs=PackedPlanes.concatenate([part.obs for part in parts]),
            legal=np.concatenate([part.legal for part in parts]),
            label_start=joined_starts([part.label_start for part in parts]),
            action=np.concatenate([part.action for part in parts]),
            value=np.concatenate([part.value for part in parts]),
            validation=np.concatenate([part.validation for part in parts]),
            ownership=None if parts[0].ownership is None else np.concatenate([p.ownership for p in parts]),
            score=None if parts[0].score is None else np.concatenate([p.score for p in parts]),
            description="; ".join(part.description for part in parts),
            value_scale=parts[0].value_scale,
        )

    def labels(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        """The labelled actions of position ``index`` and their values."""
        start, end = self.label_start[index], self.label_start[index + 1]
        return self.action[start:end], self.value[start:end]


def joined_starts(parts: list[np.ndarray]) -> np.ndarray:
    """The label starts of ragged label lists laid end to end: each of ``parts`` starts at 0 and
    ends at its number of labels; a part may hold no position (a shard whose games' positions were
    all seen before)."""
    joined = [np.zeros(1, np.int64)]
    labels = 0
    for part in parts:
        joined.append(part[1:].astype(np.int64) + labels)
        labels += int(part[-1])
    return np.concatenate(joined)


def _set_game(folder: str, game: Game, board_sizes: tuple[int, ...]) -> Game:
    """The game whose positions the set at ``folder`` holds: ``game`` itself, or ``game`` on
    another of ``board_sizes`` (Go: the same options and encoder)."""
    manifest = Manifest.read(Path(folder))
    if manifest is None:
        raise FileNotFoundError(f"{folder} holds no labelled set (run `klent distill label` first)")
    name = LabelConfig(**manifest.config).game
    if name == game.name:
        return game
    if not (isinstance(game, GoGame) and name.startswith("go") and name[2:].isdigit()):
        raise ValueError(f"{folder} holds {name} positions, not {game.name}")
    if int(name[2:]) not in board_sizes:
        raise ValueError(f"{folder} holds {name} positions: list {name[2:]} in the network's board_sizes "
                         f"(a network with board heads) to fit them beside {game.name}")
    return game.resized(int(name[2:]))


def go_q_targets(
    shard: dict[str, np.ndarray], scores: np.ndarray, score_scale: float, teacher_value_weight: float = 0.0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Go's Q targets for one shard's positions: label starts (one more entry at the end),
    actions and values.

    ``score_scale`` 0: one label a position, the game's outcome (+-1 for the mover) on the
    teacher's move, or, with ``teacher_value_weight`` w > 0 where the teacher valued its move
    (Pachi's win rate, the shard's ``teacher_value``), (1 - w) * outcome + w * that value.  The
    outcome is one number for all of a game's positions, which a network can learn by heart from
    a few thousand games; the teacher's value is each position's own.  Outcome targets saturate
    (a network fit to them reads +-1 on every move of a decided-looking position).

    ``score_scale`` S > 0: every move the teacher listed gets
    tanh((final score - its shortfall) / S), the shortfall being how many of the teacher's
    points (GNU Go's move values) it is worth less than the best listed move -- the score the
    game would have ended with had that move been played, squashed so that a won-by-40 position
    reads near 1 and a close one near 0.  Measured on 9x9 (docs/experiments/
    2026-11-25-go9-distillation.md): S = 10 made a better policy but worse values for search, so 0 is the
    default.
    """
    if score_scale <= 0:
        count = len(shard["ply"])
        targets = shard["outcome"].astype(np.float32)
        if teacher_value_weight > 0 and "teacher_value" in shard:
            valued = np.isfinite(shard["teacher_value"])
            targets[valued] += teacher_value_weight * (shard["teacher_value"][valued] - targets[valued])
        return np.arange(count + 1), shard["teacher_action"].astype(np.int64), targets
    start = shard["label_start"]
    listed = shard["value"]
    values = np.empty(len(listed), dtype=np.float32)
    for position, score in enumerate(scores):
        moves = listed[start[position] : start[position + 1]]
        values[start[position] : start[position + 1]] = np.tanh((score - (moves.max() - moves)) / score_scale)
    return start.astype(np.int64), shard["action"].astype(np.int64), values


def shard_states(
    shard: dict[str, np.ndarray], replay: Game, keep: Callable[[int], bool] = lambda game_index: True
) -> Iterator[tuple[int, int, State]]:
    """The stored positions of a shard as (position in the shard, index of its game, state),
    game by game, replaying only the games whose index ``keep`` accepts."""
    by_game: dict[int, list[int]] = {}
    for position, game_row in enumerate(shard["position_game"]):
        by_game.setdefault(int(game_row), []).append(position)
    for game_row, positions in by_game.items():
        game_index = int(shard["game_index"][game_row])
        if keep(game_index):
            states = _states_at(replay, str(shard["game_moves"][game_row]), shard["ply"][positions])
            yield from ((position, game_index, state) for position, state in zip(positions, states))


def _states_at(game: Game, moves: str, plies: np.ndarray) -> list:
    """The states of a game (given as space-separated move text) before the moves ``plies``."""
    wanted = set(int(p) for p in plies)
    state = game.initial_state()
    found = {}
    for ply, text in enumerate(moves.split() if moves else []):
        if ply in wanted:
            found[ply] = state
        state = state.play(game.text_to_action(state, text))
    if len(moves.split()) in wanted:
        found[len(moves.split())] = state
    return [found[int(p)] for p in plies]


def batches(dataset: LabelledSet, per_iteration: int, seed: int, iteration: int) -> np.ndarray:
    """The training positions of iteration ``iteration`` (0-based): the next ``per_iteration``
    of an endless walk through seeded per-epoch permutations of the training positions."""
    train = np.flatnonzero(~dataset.validation)
    if len(train) == 0:
        raise ValueError("the labelled set has no training positions")
    first = iteration * per_iteration
    chunks = []
    while sum(len(c) for c in chunks) < per_iteration:
        epoch, offset = divmod(first, len(train))
        order = np.random.default_rng([seed, epoch]).permutation(len(train))
        take = order[offset : offset + per_iteration - sum(len(c) for c in chunks)]
        chunks.append(train[take])
        first += len(take)
    return np.concatenate(chunks)


def to_samples(
    dataset: LabelledSet, index: np.ndarray, num_actions: int, temperature: float, best_weight: float = 0.0
) -> Samples:
    """`Samples` of the positions ``index``: policy target (`teacher_policy`), Q targets (NaN
    where unlabelled)."""
    count = len(index)
    masks = np.unpackbits(dataset.legal[index], axis=1, count=num_actions).astype(bool)
    policy = np.zeros((count, num_actions), dtype=np.float32)
    q_targets = np.full((count, num_actions), np.nan, dtype=np.float32)
    best = np.empty(count, dtype=np.int64)
    value = np.empty(count, dtype=np.float32)
    for row, position in enumerate(index):
        actions, values = dataset.labels(int(position))
        q_targets[row, actions] = values
        policy[row, actions] = teacher_policy(values, temperature, best_weight)
        best[row] = actions[int(values.argmax())]
        value[row] = values.max()
    own = dataset.ownership
    return Samples(
        ownership=None if own is None else own[index].astype(np.float32),
        score=None if dataset.score is None else dataset.score[index],
        obs=dataset.obs[index],
        masks=masks,
        actions=best,
        policy=policy,
        returns=value,
        value_weight=np.zeros(count, dtype=np.float32),
        simulator_evaluations=0,
        q_targets=q_targets,
    )


def teacher_policy(values: np.ndarray, temperature: float, best_weight: float = 0.0) -> np.ndarray:
    """softmax(values / temperature) over one position's labelled moves (one-hot best at 0),
    with ``best_weight`` of the mass moved onto the best move -- the first of equal values,
    which is the teacher's own choice where the labels keep its order (`klent.training.teacher`):
    among moves that all win, the one that makes progress."""
    best = np.zeros(len(values), dtype=np.float32)
    best[int(values.argmax())] = 1.0
    if temperature <= 0:
        return best
    weights = np.exp((values - values.max()) / temperature)
    soft = weights / weights.sum()
    return ((1 - best_weight) * soft + best_weight * best).astype(np.float32)


def distill_loss(
    outputs: NetOutputs, batch: dict[str, torch.Tensor], q_weight: float = 1.0
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """CE(teacher policy, pi_theta) + q_weight * per-position mean (Q_theta - Q_teacher)^2."""
    logits, action_values = outputs.policy_logits, outputs.action_values
    mask = batch["masks"]
    policy_loss = -(batch["policy"] * masked_log_policy(logits, mask)).sum(dim=-1).mean()
    value_loss = q_squared_errors(action_values, batch["q_targets"]).mean()
    return policy_loss + q_weight * value_loss, {
        "policy_loss": policy_loss.detach(),
        "value_loss": value_loss.detach(),
    }


@torch.no_grad()
def validation_metrics(
    model: torch.nn.Module, dataset: LabelledSet, num_actions: int, device: torch.device, batch_size: int = 512
) -> dict[str, float]:
    """Top-1 agreement with the teacher, regret, Q mean squared error and tactics solved on the
    validation positions, and for a Go network with those heads the share of owned points
    whose owner it predicts (`val_ownership`) and its mean absolute score error in points;
    empty when the set has none."""
    index = np.flatnonzero(dataset.validation)
    if len(index) == 0:
        return {}
    model.eval()
    agree = tactics = solved = 0
    squared = regret = q_regret = 0.0
    valued = 0  # choices whose teacher value is known (all of them when every move is labelled)
    owned_right = owned = scored = 0
    score_error = 0.0
    for start in range(0, len(index), batch_size):
        chunk = to_samples(dataset, index[start : start + batch_size], num_actions, 0.0)
        out = model(torch.from_numpy(chunk.obs).to(device))
        logits, action_values = out.policy_logits, out.action_values
        masks = torch.from_numpy(chunk.masks).to(device)
        chosen = logits.masked_fill(~masks, -1e9).argmax(dim=-1).cpu().numpy()
        by_q = action_values.float().masked_fill(~masks, -2.0).argmax(dim=-1).cpu().numpy()
        chosen_value, q_choice_value = (np.take_along_axis(chunk.q_targets, c[:, None], axis=1)[:, 0]
                                        for c in (chosen, by_q))  # the teacher's value of each choice
        known = ~np.isnan(chosen_value)  # Go labels only the teacher's move
        agree += int(((chosen == chunk.actions) | (known & (chosen_value >= chunk.returns))).sum())
        regret += float((chunk.returns - chosen_value)[known].sum())
        valued += int(known.sum())
        q_regret += float(np.nansum(chunk.returns - q_choice_value))
        if out.ownership is not None and chunk.ownership is not None:
            decided = chunk.ownership != 0  # dame and seki points have no owner to predict
            predicted = np.sign(out.ownership.float().flatten(1).cpu().numpy())
            owned_right += int((predicted == chunk.ownership)[decided].sum())
            owned += int(decided.sum())
        if out.score is not None and chunk.score is not None:
            score_error += float(np.abs(out.score.float().cpu().numpy() - chunk.score).sum())
            scored += len(chunk.score)
        targets = torch.from_numpy(chunk.q_targets).to(device)
        squared += float(q_squared_errors(action_values.float(), targets).sum())
        for row, position in enumerate(index[start : start + batch_size]):
            _, values = dataset.labels(int(position))
            if len(values) > 1 and np.partition(values, -2)[-2] <= values.max() - TACTIC_GAP:
                tactics += 1
                solved += int(chosen[row] == chunk.actions[row])
    model.train()
    metrics = {"val_top1": agree / len(index), "val_q_mse": squared / len(index), "val_positions": float(len(index))}
    if valued == len(index):
        metrics["val_regret"] = regret / valued
        metrics["val_q_regret"] = q_regret / valued  # playing argmax Q instead of argmax pi
    if tactics:
        metrics.update(val_tactics_solved=solved / tactics, val_tactics=float(tactics))
    if owned:
        metrics["val_ownership"] = owned_right / owned
    if scored:
        metrics["val_score_mae"] = score_error / scored
    return metrics


@dataclass(frozen=True)
class Distill:
    """Distillation as the trainer runs it (`klent.training.algorithm.Algorithm`): iteration ``i``
    fits the positions `batches` gives it, each of ``world_size`` processes its share.

    Go sets of several board sizes (for a network with board heads, `NetConfig.board_sizes`)
    are fitted in turn, one size an iteration, so that each minibatch holds one board shape:
    iteration ``i`` draws from ``sets[i % len(sets)]``, the run's own size first.
    """

    config: DistillConfig
    sets: tuple[LabelledSet, ...]  # one per game (board size), the run's game first
    games: tuple[Game, ...]
    seed: int
    rank: int = 0
    world_size: int = 1
    plays_games: bool = False

    @classmethod
    def load(
        cls, config: DistillConfig, game: Game, seed: int, rank: int, world_size: int, progress: bool,
        board_sizes: tuple[int, ...] = (),
    ) -> Distill:
        """Read the labelled sets of ``config.data``, folders separated by commas (a progress bar
        on the first process only); sets of other Go sizes are read when ``board_sizes`` lists
        them (the network's board heads play them)."""
        folders = [folder.strip() for folder in config.data.split(",") if folder.strip()]
        if not folders:
            raise ValueError("--algo distill needs a labelled set: --data FOLDER[,FOLDER...] or [distill] data")
        show = progress and rank == 0
        by_game: dict[str, list[LabelledSet]] = {game.name: []}
        games = {game.name: game}
        for folder in folders:
            wanted = _set_game(folder, game, board_sizes)
            games.setdefault(wanted.name, wanted)
            by_game.setdefault(wanted.name, []).append(
                LabelledSet.load(folder, wanted, progress=show, score_scale=config.score_scale,
                                 teacher_value_weight=config.teacher_value_weight))
        names = [name for name, parts in by_game.items() if parts]
        sets = tuple(LabelledSet.join(by_game[name]) for name in names)
        return cls(config, sets, tuple(games[name] for name in names), seed, rank, world_size)

    def collect(self, slots: GameSlots, network: Callable[[], Any], iteration: int) -> Samples:
        turn, round_ = iteration % len(self.sets), iteration // len(self.sets)
        labelled = self.sets[turn]
        chosen = batches(labelled, self.config.positions, self.seed, round_)
        mine = chosen[self.rank :: self.world_size]
        actions = self.games[turn].num_actions
        return to_samples(labelled, mine, actions, self.config.temperature, self.config.best_weight)

    def loss(self, outputs: NetOutputs, batch: Batch) -> Loss:
        return distill_loss(outputs, batch, self.config.q_weight)

    def validate(self, model: torch.nn.Module, device: torch.device) -> dict[str, float]:
        """`validation_metrics` of each set; those of other sizes than the run's are prefixed
        with their game (``go13/val_top1``)."""
        metrics = {}
        for turn, (labelled, game) in enumerate(zip(self.sets, self.games)):
            prefix = "" if turn == 0 else f"{game.name}/"
            found = validation_metrics(model, labelled, game.num_actions, device)
            metrics.update({prefix + key: value for key, value in found.items()})
        return metrics

    def provenance(self) -> dict[str, str]:
        # where the knowledge came from, and what its values measure (`Player.value_scale`)
        labels = "; ".join(labelled.description for labelled in self.sets)
        return {"algorithm": "distill", "labels": labels, "value_scale": self.sets[0].value_scale}
