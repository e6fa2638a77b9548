"""The training loop behind `klent train`: collect, fit, then export, evaluate, log, checkpoint.

One iteration = the algorithm's samples (`klent.training.algorithm`: ``steps`` self-play moves in
each of ``games`` parallel games, or a chunk of a teacher's labelled positions), fitted in one
pass of minibatches (`klent.training.fitting`, Adam), then on rank 0: export ``latest.onnx``, evaluate
when due (and play the anchor, `klent.training.anchor`), append a line to ``metrics.jsonl`` and write
``checkpoint.pt`` (`klent.training.checkpoint`).  Every write is atomic and the checkpoint holds everything the next
iteration depends on, so ``--resume`` continues exactly where the last complete iteration left
off.

Under ``torchrun`` (`klent.training.distributed`) the network is wrapped in DistributedDataParallel:
each rank plays its own games with its own seed, gradients are averaged across ranks, and rank
0 alone writes files.  ``batch_size`` is the global minibatch; each rank takes its share.
The configuration is `klent.training.config.TrainConfig`.
"""

from __future__ import annotations

import contextlib
import math
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.nn.parallel import DistributedDataParallel
from tqdm import tqdm

from klent.engine.files import copy_atomically, write_text_atomically
from klent.engine.games.base import Game
from klent.engine.games.go import GoGame
from klent.engine.network import OnnxEvaluator, default_threads
from klent.training.algorithm import SelfPlayNetwork, build_algorithm
from klent.training.anchor import ANCHOR_MATCHES, play_anchor, probe_anchor
from klent.training.archive import StartArchive
from klent.training.checkpoint import (
    CHECKPOINT,
    CONFIG_TOML,
    LATEST_ONNX,
    METRICS,
    REFERENCE_ONNX,
    SNAPSHOTS,
    Counters,
    RunState,
    initial_weights,
    process_state,
    read_run_state,
    remove_stale_temporaries,
    set_rng_state,
    write_run_state,
)
from klent.training.config import TrainConfig, config_changes, config_to_toml
from klent.training.distributed import init_distributed, pick_device
from klent.training.export import export_onnx
from klent.training.fitting import LossFn, TrainingDiverged, fit, with_auxiliary
from klent.training.metrics import append_metrics, greedy_agent, match_score, play_games, random_agent, truncate_metrics
from klent.training.nets import KlentNet, build_net
from klent.training.selfplay import GameSlots, Samples
from klent.training.torch_evaluator import TorchEvaluator


class Trainer:
    """One training run in one run folder (one instance per torchrun process)."""

    def __init__(
        self,
        config: TrainConfig,
        out_dir: str | Path,
        *,
        resume: bool = False,
        device: str | None = None,
        threads: int | None = None,
        progress: bool = True,
    ) -> None:
        self.config = config
        self.out = Path(out_dir)
        self.device = pick_device(device)
        self.dist = init_distributed(self.device)
        # CPU threads for torch and ONNX Runtime: the cores shared among this host's ranks.
        self.threads = threads or max(1, default_threads() // self.dist.local_world_size)
        torch.set_num_threads(self.threads)

        # The initial weights come from the config's seed (identical on every rank; DDP would
        # broadcast rank 0's anyway); everything after from a seed of each rank's own.
        torch.manual_seed(config.seed)
        self.game: Game = config.make_game()
        self.net_config = config.net_config()
        self.model: KlentNet = build_net(self.game, self.net_config).to(self.device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=config.optim.lr)

        seed = config.seed * 1_000_003 + self.dist.rank  # each rank its own games
        torch.manual_seed(seed)
        random.seed(seed)
        self.rng = np.random.default_rng(seed)
        archive = (
            StartArchive(config.selfplay.archive_size, config.selfplay.archive_initial_prob)
            if config.selfplay.archive_size
            else None
        )
        # The augmentation's action permutations, built once per board shape (none: no augmentation).
        self._symmetries: dict[tuple[int, ...], np.ndarray] = {}
        resigning = config.selfplay.resign_threshold > 0
        self.slots = GameSlots(
            self.game,
            config.selfplay.games,
            self.rng,
            archive,
            config.selfplay.resign_disabled_fraction if resigning else None,
        )
        self.iteration = 0
        self._exported = -1  # iteration whose weights latest.onnx holds (-1: none yet)
        self.simulator_evaluations = 0
        self.samples_seen = 0
        self.wall_seconds = 0.0
        self.cpu_seconds = 0.0  # CPU time of every rank's process, all threads (the budget unit)
        self.config_history: list[dict[str, Any]] = []  # settings changed on resumption, and when
        self._resumed_info: dict[str, str] = {}  # the checkpoint's training_info, on a resumption

        checkpoint = self.out / CHECKPOINT
        if resume:
            self._load(checkpoint)
        elif checkpoint.exists():
            raise ValueError(
                f"{self.out} already holds a training run; pass --resume to continue it "
                "or choose another --out"
            )
        elif config.init:
            self.model.load_state_dict(initial_weights(config.init, self.game, self.net_config))
        self.algorithm = build_algorithm(
            config, self.game, self.dist.rank, self.dist.world_size, progress, self.device
        )
        if resume:
            self._check_kl_reference()
        # The module that fits: DDP averages the gradients across ranks (and keeps the
        # batch-norm statistics of rank 0); self-play and export use the plain self.model.
        self.ddp: torch.nn.Module = self.model
        if self.dist.enabled:
            device_ids = [self.device.index] if self.device.type == "cuda" else None
            self.ddp = DistributedDataParallel(self.model, device_ids=device_ids)
        if self.dist.is_main:
            if config.eval.anchor:
                probe_anchor(config.game, config.eval)  # a bad anchor option fails now, not at its first match
            self.out.mkdir(parents=True, exist_ok=True)
            remove_stale_temporaries(self.out)  # left by a process killed mid-write
            write_text_atomically(self.out / CONFIG_TOML, config_to_toml(config))  # for people to read
            truncate_metrics(self.out / METRICS, self.iteration)
            if self._plays_through_onnx:
                with _random_state_kept():
                    self._export()  # the weights the next self-play uses (fresh on a resume)
        self.dist.barrier()

    # -- the loop --------------------------------------------------------------------------------

    def run(
        self,
        iterations: int | None = None,
        minutes: float | None = None,
        progress: bool = True,
        evaluations: int | None = None,
    ) -> int:
        """Train until ``iterations`` in total are done, ``evaluations`` simulator evaluations in
        total are spent or ``minutes`` have passed, whichever comes first (the iteration under way
        is finished); returns the number of iterations completed.  A budget in evaluations is
        what the efficiency curves compare algorithms at: their iterations cost different numbers
        of evaluations."""
        if iterations is None and minutes is None and evaluations is None:
            iterations = self.config.iterations
        started = time.monotonic()
        bar = tqdm(
            total=iterations,
            initial=self.iteration,
            disable=not (progress and self.dist.is_main),
            unit="it",
            dynamic_ncols=True,
        )
        try:
            while iterations is None or self.iteration < iterations:
                if evaluations is not None and self.simulator_evaluations >= evaluations:
                    break
                if minutes is not None and self.dist.agree(time.monotonic() - started >= 60 * minutes):
                    break
                record = self.step()
                bar.update(1)
                bar.set_postfix(_postfix(record))
        finally:
            bar.close()
        if self.dist.is_main and self._exported != self.iteration:
            with _random_state_kept():
                self._export()  # latest.onnx always holds the final weights
        return self.iteration

    def step(self) -> dict[str, Any]:
        """One iteration: collect, fit, then (rank 0) export, evaluate, log, checkpoint."""
        tick = time.monotonic()
        cpu_tick = time.process_time()
        samples = self._collect()
        tock = time.monotonic()
        lr = self.config.optim.lr_after(self.iteration)
        for group in self.optimizer.param_groups:  # a resumption's [optim] may have changed it
            group["lr"] = lr
        try:
            parts = fit(
                self.ddp,
                self.optimizer,
                samples,
                self._loss_fn(),
                max(1, self.config.optim.batch_size // self.dist.world_size),
                self.config.optim.epochs,
                self.device,
                self._symmetries_of(samples.obs.shape[1:]),
                self.config.optim.autocast_dtype(),
            )
        except TrainingDiverged as error:
            kept = f"{CHECKPOINT} keeps iteration {self.iteration}" if self.iteration else f"no {CHECKPOINT} yet"
            raise TrainingDiverged(
                f"training diverged in iteration {self.iteration + 1}: {error}; {kept} "
                "(lower [optim] lr or lr_schedule)"
            ) from None
        self.dist.broadcast_buffers(self.model)
        done = time.monotonic()
        self.iteration += 1
        totals = self.dist.sum([samples.simulator_evaluations, len(samples), time.process_time() - cpu_tick])
        means = self.dist.mean({**parts, **samples.stats})
        evaluations_before = self.simulator_evaluations
        self.simulator_evaluations += int(totals[0])
        self.samples_seen += int(totals[1])
        self.wall_seconds += done - tick
        self.cpu_seconds += totals[2]
        record: dict[str, Any] = {
            "iteration": self.iteration,
            "simulator_evaluations": self.simulator_evaluations,
            "samples": self.samples_seen,
            **means,
            "lr": lr,
            "selfplay_seconds": tock - tick,
            "train_seconds": done - tock,
            "samples_per_second": totals[1] / (done - tick),
            "simulator_evaluations_per_second": totals[0] / (done - tick),
            "wall_seconds": self.wall_seconds,
            "cpu_seconds": self.cpu_seconds,
        }
        processes = self.dist.gather(process_state(self.rng, self.slots.state_dict(), self.model))
        if len({p["weights_sha256"] for p in processes}) != 1:
            raise RuntimeError("the ranks' weights differ after an update; check torchrun's setup")
        if self.dist.is_main:
            with _random_state_kept():  # the export may draw random numbers: not the run's
                self._finish_iteration(record, processes, evaluations_before)
        self.dist.barrier()
        return record

    def _finish_iteration(
        self, record: dict[str, Any], processes: list[dict[str, Any]], evaluations_before: int
    ) -> None:
        """Rank 0: export, evaluate (against random play and the previous model every ``every``
        iterations, against the anchor whenever the simulator evaluations, ``evaluations_before``
        before this iteration, cross a multiple of ``anchor_every_evaluations``), log and
        checkpoint -- in this order, so that a kill at any point leaves the previous checkpoint
        and a log that `truncate_metrics` repairs."""
        evaluate = self.config.eval.every > 0 and self.iteration % self.config.eval.every == 0
        anchor = self.config.eval.anchor_due(evaluations_before, self.simulator_evaluations)
        keep = self.config.keep_every > 0 and self.iteration % self.config.keep_every == 0
        if (
            evaluate
            or anchor
            or keep
            or self._plays_through_onnx
            or self.iteration % self.config.export_every == 0
        ):
            self._export()
        if keep:
            copy_atomically(self.out / LATEST_ONNX, self.out / SNAPSHOTS / f"iteration-{self.iteration:06d}.onnx")
        if evaluate:
            record.update(self._evaluate())
        if anchor:  # the model as exported above, against the fixed opponent (klent.training.anchor)
            match_folder = self.out / ANCHOR_MATCHES / f"iteration-{self.iteration:06d}"
            record.update(play_anchor(self.out / LATEST_ONNX, self.config.game, self.config.eval, match_folder))
        append_metrics(self.out / METRICS, record)
        state = RunState(
            model=self.model,
            config=self.config,
            optimizer=self.optimizer.state_dict(),
            counters=Counters(
                iteration=self.iteration,
                simulator_evaluations=self.simulator_evaluations,
                samples=self.samples_seen,
                wall_seconds=self.wall_seconds,
                cpu_seconds=self.cpu_seconds,
            ),
            processes=processes,
            config_history=self.config_history,
            training_info=self._training_info(),
        )
        write_run_state(self.out / CHECKPOINT, self.model, self.game, self.net_config, state)
        if evaluate:
            copy_atomically(self.out / LATEST_ONNX, self.out / REFERENCE_ONNX)

    # -- pieces ------------------------------------------------------------------------------------

    @property
    def _plays_through_onnx(self) -> bool:
        """Self-play reads ``latest.onnx``, which must then follow every update; an algorithm
        that plays no games has its model exported every ``export_every`` iterations only."""
        return self.algorithm.plays_games and self.config.selfplay.evaluator == "onnx"

    def _collect(self) -> Samples:
        return self.algorithm.collect(self.slots, self._network, self.iteration)

    def _network(self) -> SelfPlayNetwork:
        """The current network as self-play asks it (``[selfplay] evaluator``)."""
        if self.config.selfplay.evaluator == "onnx":
            return OnnxEvaluator(self.out / LATEST_ONNX, self.game, threads=self.threads)
        return TorchEvaluator(self.model, self.game, self.device)

    def _loss_fn(self) -> LossFn:
        if self.net_config.ownership_head or self.net_config.score_head:
            optim = self.config.optim
            return with_auxiliary(self.algorithm.loss, optim.ownership_weight, optim.score_weight)
        return self.algorithm.loss

    def _evaluate(self) -> dict[str, float]:
        """The algorithm's own metrics, then greedy play of ``latest.onnx`` against random play
        and against ``reference.onnx``."""
        cfg = self.config.eval
        result = self.algorithm.validate(self.model, self.device)
        if cfg.games == 0:
            return result
        rng = np.random.default_rng([self.config.seed, self.iteration])
        current = greedy_agent(OnnxEvaluator(self.out / LATEST_ONNX, self.game, threads=self.threads))
        result["winrate_random"] = match_score(play_games(self.game, current, random_agent(rng), cfg.games, rng))
        reference = self.out / REFERENCE_ONNX
        if reference.exists():
            opponent = greedy_agent(OnnxEvaluator(reference, self.game, threads=self.threads))
            result["winrate_reference"] = match_score(
                play_games(self.game, current, opponent, cfg.games, rng, opening_plies=cfg.opening_plies)
            )
        return result

    def _symmetries_of(self, shape: tuple[int, ...]) -> np.ndarray | None:
        """The board symmetries of samples of observation ``shape`` (a distillation of several Go
        sizes fits each in turn), or None without augmentation."""
        if not self.config.optim.symmetries:
            return None
        if shape not in self._symmetries:
            game = self.game
            if isinstance(game, GoGame) and shape[1:] != game.observation_shape[1:]:
                game = game.resized(shape[-1])
            self._symmetries[shape] = game.symmetries()
        return self._symmetries[shape]

    def _export(self) -> None:
        export_onnx(self.model, self.game, self.out / LATEST_ONNX, self._training_info())
        self._exported = self.iteration

    def _training_info(self) -> dict[str, str]:
        info = {
            **self.algorithm.provenance(),
            "iterations": str(self.iteration),
            "simulator_evaluations": str(self.simulator_evaluations),
        }
        if self.config.init:
            info["init"] = self.config.init
        return info

    def _load(self, path: Path) -> None:
        if not path.exists():
            raise FileNotFoundError(f"nothing to resume: no {CHECKPOINT} in {self.out}")
        state = read_run_state(path, self.device)
        self._resumed_info = state.training_info
        self.config_history = state.config_history
        changes = config_changes(state.config, self.config)
        if changes:
            self.config_history.append({"iteration": state.counters.iteration, "changes": changes})
        if len(state.processes) != self.dist.world_size:
            raise ValueError(
                f"{self.out} was trained by {len(state.processes)} process(es); resume it with as many"
            )
        self.model.load_state_dict(state.model.state_dict())
        self.optimizer.load_state_dict(state.optimizer)  # `step` sets the lr
        self.iteration = state.counters.iteration
        self.simulator_evaluations = state.counters.simulator_evaluations
        self.samples_seen = state.counters.samples
        self.wall_seconds = state.counters.wall_seconds
        self.cpu_seconds = state.counters.cpu_seconds
        mine = state.processes[self.dist.rank]
        set_rng_state(self.rng, mine["rng"])
        self.slots.load_state_dict(mine["games"])

    def _check_kl_reference(self) -> None:
        """Refuse to resume an anchored run whose KL reference (``init``, read again on every
        resumption) is no longer the network it started from: a file replaced or moved would
        otherwise change the run's target without a word."""
        started = self._resumed_info.get("kl_reference_sha256")
        now = self.algorithm.provenance().get("kl_reference_sha256")
        if started and now != started:
            raise ValueError(
                f"{self.out}: the KL reference {self.config.init} is not the network this run started "
                "from; put that network back there, or resume with --set init=PATH where it is now"
            )

    def close(self) -> None:
        self.dist.close()


@contextlib.contextmanager
def _random_state_kept() -> Iterator[None]:
    """Run a block without moving torch's or Python's global random generators, so that what
    rank 0 alone does (export, evaluation) cannot make a resumed run differ from an unbroken
    one."""
    python_state = random.getstate()
    with torch.random.fork_rng(devices=[]):
        yield
    random.setstate(python_state)


def _postfix(record: dict[str, Any]) -> dict[str, str]:
    shown = {"loss": record.get("loss"), "H": record.get("entropy")}
    shown["vs_random"] = record.get("winrate_random")
    shown["vs_anchor"] = record.get("anchor_score")
    return {k: f"{v:.3g}" for k, v in shown.items() if isinstance(v, float) and math.isfinite(v)}
