"""Network evaluators: a batch of states in, masked policy logits and action values out.

Search and self-play call an `Evaluator` and never care whether ONNX Runtime or torch runs
behind it.  Every value is from the view of the side to move, in [-1, 1].  Illegal actions
carry the logit `MASKED_LOGIT` (a large negative number rather than -inf, so that softmax and
log-softmax stay finite) and the action value 0.

`OnnxEvaluator` is the engine's evaluator: it runs a klent ONNX model file (the format is
defined below and written by `klent.training.export`) and refuses a model made for another game or
encoder version.  The trainer's torch twin is `klent.training.torch_evaluator.TorchEvaluator`.
`read_model_info` reads what a model file says about itself without starting ONNX Runtime.
"""

from __future__ import annotations

import ctypes.util
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

import numpy as np
import onnxruntime as ort

import klent.engine.games
from klent.engine.games.base import Game, State
from klent.engine.onnx_header import read_onnx_header

MASKED_LOGIT = np.float32(-1e9)


class Evaluation(NamedTuple):
    """Network outputs for a batch of B states over A actions."""

    policy_logits: np.ndarray  # float32[B, A]; illegal actions = MASKED_LOGIT
    action_values: np.ndarray  # float32[B, A]; illegal actions = 0
    state_value: np.ndarray | None  # float32[B], or None for a policy + action-value model
    ownership: np.ndarray | None = None  # float32[B, H, W] in [-1, 1], for a model with that head
    score: np.ndarray | None = None  # float32[B], final score in points, for a model with that head


class Evaluator(Protocol):
    """Anything that evaluates states of one game in batches."""

    game: Game

    def evaluate(self, states: Sequence[State]) -> Evaluation:
        """Evaluate ``states`` (all of ``game``) in one batch."""
        ...


class EncodedEvaluator(Protocol):
    """An evaluator of already encoded positions (`OnnxEvaluator`), which wrappers build on."""

    game: Game

    def evaluate_encoded(self, obs: np.ndarray, masks: np.ndarray) -> Evaluation: ...


def softmax(logits: np.ndarray) -> np.ndarray:
    """Softmax over the last axis, stable for masked logits."""
    shifted = logits - logits.max(axis=-1, keepdims=True)
    weights = np.exp(shifted)
    return weights / weights.sum(axis=-1, keepdims=True)


def state_values(evaluation: Evaluation) -> np.ndarray:
    """V(s) per state: the value head when the model has one, else sum_a pi(a|s) Q(s, a).

    The second form is how a KLENT network (policy + action values only) values a position
    (KLENT paper, appendix H).
    """
    if evaluation.state_value is not None:
        return evaluation.state_value
    pi = softmax(evaluation.policy_logits)
    return np.einsum("ba,ba->b", pi, evaluation.action_values).astype(np.float32)


def encode_states(game: Game, states: Sequence[State]) -> tuple[np.ndarray, np.ndarray]:
    """Observations float32[B, C, H, W] and legal masks bool[B, A] of ``states``.

    Every evaluator's ``evaluate`` is this followed by its own ``evaluate_encoded``.
    """
    masks = np.zeros((len(states), game.num_actions), dtype=np.bool_)
    for i, state in enumerate(states):
        masks[i] = state.legal_mask()
    return game.encode_batch(states), masks


def apply_legal_mask(
    logits: np.ndarray, action_values: np.ndarray, masks: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Mask raw network outputs with ``masks`` (bool[B, A]) as the contract above requires."""
    return (
        np.where(masks, logits, MASKED_LOGIT).astype(np.float32),
        np.where(masks, action_values, np.float32(0.0)).astype(np.float32),
    )


# --- ONNX models ------------------------------------------------------------------------------
#
# A model file is an ONNX graph with input ``obs`` float32[B, C, H, W] (dynamic batch axis),
# outputs ``policy_logits`` and ``action_values`` (and ``state_value``, ``ownership`` [B, H, W]
# and ``score`` [B] when trained with those heads: Go's final owner of each point and final
# score, from the side to move's view),
# and metadata props naming the game and the encoder version it was trained for (DESIGN.md).
# A Go model with dynamic board axes also lists the board sizes it serves (``klent.board_sizes``,
# a JSON list): it plays those sizes of Go besides the one its ``klent.game`` names.
# `klent.training.export` writes these names; this module is the one place that defines them.

INPUT_NAME = "obs"
POLICY_OUTPUT = "policy_logits"
ACTION_VALUE_OUTPUT = "action_values"
STATE_VALUE_OUTPUT = "state_value"
OWNERSHIP_OUTPUT = "ownership"
SCORE_OUTPUT = "score"
# The outputs in the order of `Evaluation`'s fields.
EVALUATION_OUTPUTS = (POLICY_OUTPUT, ACTION_VALUE_OUTPUT, STATE_VALUE_OUTPUT, OWNERSHIP_OUTPUT, SCORE_OUTPUT)
META_GAME = "klent.game"
META_ENCODER = "klent.encoder"
META_ARCH = "klent.arch"
META_TRAINING = "klent.training"
META_QUANTIZATION = "klent.quantization"  # JSON; only in a quantized model (`klent.training.quantize`)
META_BOARD_SIZES = "klent.board_sizes"  # JSON list of Go board sizes; only in a model with dynamic board axes

# Best first.  CPU is always available and always last.
PROVIDER_PREFERENCE = (
    "TensorrtExecutionProvider",
    "CUDAExecutionProvider",
    "CPUExecutionProvider",
)
# Options given to a provider when a session starts on it.  ONNX Runtime's CUDA provider by
# default lets cuDNN time every convolution algorithm (EXHAUSTIVE) for each new input shape, and
# a search's batches change size all the time; HEURISTIC picks from cuDNN's heuristics instead.
# Measured on an H100 (benchmarks/RESULTS.md, "The engine on a GPU"): the same raw speed at a
# fixed batch, one game's Gumbel search 5.5x and 256 games' 1.6x faster on the Go model.
PROVIDER_OPTIONS: dict[str, dict[str, str]] = {
    "CUDAExecutionProvider": {"cudnn_conv_algo_search": "HEURISTIC"},
}
# The devices a user may ask for (`--device` of klent gtp, uci and serve) and the providers each
# stands for, best first; "auto" is `select_providers`' choice, the GPU when there is one.  A
# user may want the CPU on a machine with a GPU: with the shipped 6x64 networks one game's
# search ran about 5 times faster on the CPU in a short benchmark (benchmarks/RESULTS.md, "The
# engine on a GPU").
DEVICES: dict[str, tuple[str, ...]] = {
    "cpu": ("CPUExecutionProvider",),
    "cuda": ("CUDAExecutionProvider", "CPUExecutionProvider"),
    "tensorrt": ("TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider"),
}
DEVICE_CHOICES = ("auto", *DEVICES)


class ModelMismatchError(ValueError):
    """A model trained for another game or another encoder version than the one in use."""


class ModelFormatError(ValueError):
    """A file that is not a klent ONNX model (unreadable, or missing the klent metadata), or
    one ONNX Runtime cannot load or evaluate on its game's initial position."""


class ModelOutputError(ValueError):
    """A model that loaded failed on a position at play time: ONNX Runtime raised, or its
    outputs are NaN or infinite.  The search asking for that evaluation fails with it (an error
    for that move), where NaN values would otherwise reach the search and break it."""


# The most ONNX Runtime intra-op threads a session may ask for (UCI's Threads option has the same
# cap): each thread is spawned at once with its own stack and arena, so a mistyped 100000 would
# grow the process by tens of megabytes a second and never serve.
MAX_THREADS = 64
# The longest klent metadata value parsed as JSON (``klent.training``, ...): a real one is a few
# hundred bytes.  Its nesting is bounded by the parser's recursion limit (`_metadata_json`).
MAX_METADATA_JSON = 1 << 20


# The precisions a player can ask for.  float32 is the model file itself; int8 is its quantized
# sibling beside it, ``<stem>.int8.onnx`` (`klent quantize MODEL` writes it there by default).
# A name convention rather than a setting in the model, so that every front end that finds the
# float32 model (weights/<game>.onnx, --model, the server's folder) finds the int8 one too.
PRECISIONS = ("float32", "int8")


def precision_path(path: str | os.PathLike[str], precision: str) -> str:
    """Where the ``precision`` version of the float32 model at ``path`` is (it may not exist)."""
    path = os.fspath(path)
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    return path if precision == "float32" else f"{os.path.splitext(path)[0]}.{precision}.onnx"


def model_at_precision(path: str | os.PathLike[str], precision: str) -> str:
    """The file to play for the float32 model at ``path`` in ``precision`` (`precision_path`).

    FileNotFoundError (one line, with the command that makes it) when the int8 sibling does
    not exist, `ModelFormatError` when that file is not a quantized model.
    """
    path = os.fspath(path)
    chosen = precision_path(path, precision)
    if chosen == path:
        return path
    if not os.path.isfile(chosen):
        raise FileNotFoundError(
            f"no {precision} model for {path}: {chosen} does not exist (`klent quantize {path}` makes it)"
        )
    if not read_model_info(chosen).quantization:
        raise ModelFormatError(f"{chosen} is not a quantized model (`klent quantize {path}` makes one)")
    return chosen


@dataclass(frozen=True)
class ModelInfo:
    """What a model file says about itself."""

    path: str
    game: str  # game id, e.g. "go9"
    encoder_version: int
    arch: str  # e.g. "resnet-6x64"
    training: dict[str, str]  # algorithm, simulator evaluations, date, ...
    has_action_values: bool
    has_state_value: bool
    has_ownership: bool = False
    has_score: bool = False
    quantization: dict[str, str] = field(default_factory=dict)  # scheme, calibration, ...; {} for float32
    board_sizes: tuple[int, ...] = ()  # Go sizes a model with dynamic board axes serves; () for one size

    def serves(self, game_id: str) -> bool:
        """Whether the model plays ``game_id``: its own game, or a Go size it lists."""
        return game_id == self.game or (game_id.startswith("go") and game_id[2:] in map(str, self.board_sizes))


def select_providers(available: Sequence[str], tensorrt_found: bool | None = None) -> list[str]:
    """The usable execution providers among ``available``, best first (TensorRT, CUDA, CPU).

    A GPU build of ONNX Runtime lists TensorRT whether or not TensorRT's own library is
    installed, and a session tried on it without that library logs an error to stderr before
    it fails over (seen on an H100 with no libnvinfer): TensorRT is chosen only when
    ``tensorrt_found``, by default when the dynamic linker can find libnvinfer.
    """
    chosen = [p for p in PROVIDER_PREFERENCE if p in available]
    if "TensorrtExecutionProvider" in chosen:
        if tensorrt_found is None:
            tensorrt_found = ctypes.util.find_library("nvinfer") is not None
        if not tensorrt_found:
            chosen.remove("TensorrtExecutionProvider")
    return chosen if "CPUExecutionProvider" in chosen else [*chosen, "CPUExecutionProvider"]


def device_providers(device: str) -> list[str]:
    """The execution providers for ``device`` (one of `DEVICE_CHOICES`), best first.

    ValueError, in one line, for an unknown device or one this ONNX Runtime cannot run (the
    CPU-only package has no CUDA): a user who asked for the GPU is told, not silently given
    the CPU.
    """
    available = ort.get_available_providers()
    if device == "auto":
        return select_providers(available)
    if device not in DEVICES:
        raise ValueError(f"device must be one of {', '.join(DEVICE_CHOICES)}, not {device!r}")
    providers = list(DEVICES[device])
    if providers[0] not in available:
        raise ValueError(
            f"device {device}: this ONNX Runtime ({ort.__version__}) has no {providers[0]} "
            "(the onnxruntime-gpu package has it)"
        )
    return providers


def default_threads() -> int:
    """Intra-op threads: every core this process may use, at most 4.

    On the 2-core reference machine two threads roughly double throughput at batch 16-64
    over one.  The cap of 4 is a guess, not a measurement: small boards give each operator
    little to split, and spare cores serve other searches or server workers better.
    """
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, 4))


class OnnxEvaluator:
    """Runs a klent ONNX model with ONNX Runtime; implements `Evaluator`.

    ``game`` is checked against the model's metadata (`ModelMismatchError` on a different game
    or encoder version); when it is None the game named by the model is built.  ``device``
    picks the execution providers (`device_providers`; default: the GPU when there is one);
    ``threads`` sets the intra-op threads (default `default_threads`).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        game: Game | None = None,
        device: str = "auto",
        threads: int | None = None,
    ) -> None:
        path = os.fspath(path)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"no model file {path!r}")
        if threads is not None and not 1 <= threads <= MAX_THREADS:
            raise ValueError(f"threads must be between 1 and {MAX_THREADS}, got {threads}")
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads if threads is not None else default_threads()
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3  # errors only: ORT's warnings are not for our users
        # Idle worker threads sleep instead of spinning.  Spinning gains little here and, on a
        # small machine shared with the search, the server or other engines, the spinning
        # threads steal the cores those need (measured: 2 spinning threads were the slowest
        # setting on a busy 2-core machine).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = _open_session(path, options, device_providers(device))
        self.providers: list[str] = self.session.get_providers()
        self.info = read_model_info(path)
        if game is None:
            try:
                game = klent.engine.games.get(self.info.game)
            except ValueError:
                raise ModelMismatchError(
                    f"{path} is a model for {self.info.game!r}, a game this klent does not know"
                ) from None
        game = _game_for(self.info, game)
        _check_fits(self.info, self.session, game)
        self.game = game
        self._outputs = [POLICY_OUTPUT]
        if self.info.has_action_values:
            self._outputs.append(ACTION_VALUE_OUTPUT)
        if self.info.has_state_value:
            self._outputs.append(STATE_VALUE_OUTPUT)
        if self.info.has_ownership:
            self._outputs.append(OWNERSHIP_OUTPUT)
        if self.info.has_score:
            self._outputs.append(SCORE_OUTPUT)
        self._probe()

    def _probe(self) -> None:
        """Refuse a model that cannot evaluate the game's initial state: ONNX Runtime fails on
        it (an operator that cannot run, an allocation beyond the machine), or its outputs are
        NaN or infinite (the weights of a diverged training run).  At load time, not at the
        first search's move."""
        try:
            self.evaluate([self.game.initial_state()])
        except ModelOutputError as error:
            raise ModelFormatError(f"{error} on {self.game.name}'s initial position") from None

    def _run(self, obs: np.ndarray) -> list[np.ndarray]:
        """The model's outputs on ``obs``; ONNX Runtime's failure as a one-line `ModelOutputError`."""
        try:
            return self.session.run(self._outputs, {INPUT_NAME: obs})
        except Exception as error:  # noqa: BLE001 - ORT raises its own exception types
            message = " ".join(str(error).split())
            raise ModelOutputError(f"{self.info.path}: ONNX Runtime fails to evaluate it ({message})") from None

    def evaluate(self, states: Sequence[State]) -> Evaluation:
        """Encode ``states`` and evaluate them in one batch."""
        return self.evaluate_encoded(*encode_states(self.game, states))

    def evaluate_encoded(self, obs: np.ndarray, masks: np.ndarray) -> Evaluation:
        """Evaluate already encoded observations float32[B, C, H, W] with legal masks bool[B, A].

        A model without an action-value head (the Gumbel AlphaZero baseline) reports action
        values of 0; its state value is what a search should use.
        """
        batch = obs.shape[0]
        expected_obs = (batch, *self.game.observation_shape)
        if obs.shape != expected_obs or masks.shape != (batch, self.game.num_actions):
            raise ValueError(
                f"expected observations [B, {', '.join(map(str, self.game.observation_shape))}]"
                f" and masks [B, {self.game.num_actions}], got {obs.shape} and {masks.shape}"
            )
        outputs = dict(zip(self._outputs, self._run(np.ascontiguousarray(obs, dtype=np.float32))))
        q = outputs.get(ACTION_VALUE_OUTPUT)
        if q is None:
            q = np.zeros((batch, self.game.num_actions), dtype=np.float32)
        logits, q = apply_legal_mask(outputs[POLICY_OUTPUT], q, masks)
        v, ownership, score = (outputs.get(name) for name in (STATE_VALUE_OUTPUT, OWNERSHIP_OUTPUT, SCORE_OUTPUT))
        evaluation = Evaluation(
            logits,
            q,
            None if v is None else v.astype(np.float32).reshape(batch),
            None if ownership is None else ownership.astype(np.float32),
            None if score is None else score.astype(np.float32).reshape(batch),
        )
        # Checked after masking: what the network says of an illegal action does not matter.
        for name, value in zip(EVALUATION_OUTPUTS, evaluation):
            if value is not None and not np.isfinite(value).all():
                raise ModelOutputError(
                    f"{self.info.path}: its {name} are not finite (NaN or infinite), as from a diverged training run"
                )
        return evaluation


def _open_session(
    path: str, options: ort.SessionOptions, providers: list[str]
) -> ort.InferenceSession:
    """An ONNX Runtime session on the first of ``providers`` (best first) that works.

    A GPU provider can be listed as available and still fail to start (TensorRT or CUDA
    libraries missing); the next one is tried then.  ORT's own fallback is disabled because it
    prints to stdout, which is the GTP/UCI channel.
    """
    error: Exception | None = None
    for start in range(len(providers)):
        try:
            return ort.InferenceSession(
                path,
                sess_options=options,
                providers=providers[start:],
                provider_options=[PROVIDER_OPTIONS.get(name, {}) for name in providers[start:]],
                enable_fallback=0,
            )
        except Exception as failure:  # ORT raises its own exception types
            error = failure
    raise ModelFormatError(f"{path}: ONNX Runtime cannot load it ({error})")


def read_model_info(path: str | os.PathLike[str]) -> ModelInfo:
    """What the model file at ``path`` says about itself (its game, encoder, heads), read
    without starting ONNX Runtime: a protocol that only needs to know a model's game does not
    pay for a second session.  `ModelFormatError` if it is not a klent model."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no model file {path!r}")
    try:
        header = read_onnx_header(path)
    except (OSError, ValueError) as error:
        raise ModelFormatError(f"{path}: not an ONNX model ({error})") from None
    meta = header.metadata
    missing = [key for key in (META_GAME, META_ENCODER) if key not in meta]
    if missing:
        raise ModelFormatError(f"{path}: not a klent model (no {' or '.join(missing)} metadata)")
    try:
        if len(meta[META_ENCODER]) > 9:  # a version number, not int()'s 4,301 digits
            raise ValueError(f"{META_ENCODER} is not a version number")
        encoder_version = int(meta[META_ENCODER])
        training = _metadata_json(meta, META_TRAINING, "{}")
        quantization = _metadata_json(meta, META_QUANTIZATION, "{}")
        board_sizes = _metadata_json(meta, META_BOARD_SIZES, "[]")
        if not isinstance(training, dict) or not isinstance(quantization, dict):
            raise ValueError(f"{META_TRAINING} or {META_QUANTIZATION} is not a JSON object")
        if not isinstance(board_sizes, list) or not all(type(size) is int for size in board_sizes):
            raise ValueError(f"{META_BOARD_SIZES} is not a list of board sizes")
    except ValueError as error:
        raise ModelFormatError(f"{path}: malformed klent metadata ({error})") from None
    input_names, output_names = set(header.inputs), set(header.outputs)
    if INPUT_NAME not in input_names or POLICY_OUTPUT not in output_names:
        raise ModelFormatError(
            f"{path}: not a klent model (needs input {INPUT_NAME!r}, output {POLICY_OUTPUT!r})"
        )
    return ModelInfo(
        path=path,
        game=meta[META_GAME],
        encoder_version=encoder_version,
        arch=meta.get(META_ARCH, "unknown"),
        training={str(k): str(v) for k, v in training.items()},
        has_action_values=ACTION_VALUE_OUTPUT in output_names,
        has_state_value=STATE_VALUE_OUTPUT in output_names,
        has_ownership=OWNERSHIP_OUTPUT in output_names,
        has_score=SCORE_OUTPUT in output_names,
        quantization={str(k): str(v) for k, v in quantization.items()},
        board_sizes=tuple(board_sizes),
    )


def _metadata_json(meta: dict[str, str], key: str, default: str) -> Any:
    """The JSON value of metadata ``key`` (``default`` when absent); ValueError for malformed
    JSON, a text longer than `MAX_METADATA_JSON`, or one nested deeper than the parser goes."""
    text = meta.get(key, default)
    if len(text) > MAX_METADATA_JSON:
        raise ValueError(f"{key} is {len(text)} characters long, more than {MAX_METADATA_JSON}")
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError(f"{key} is nested too deeply") from None


def _game_for(info: ModelInfo, game: Game) -> Game:
    """``game`` encoding observations as the model expects: a Go model of encoder version 1
    or 2 plays with either layout (`Game.with_encoder`); a version this klent cannot produce,
    or another game, is a `ModelMismatchError`."""
    if not info.serves(game.name):
        raise ModelMismatchError(f"{info.path} is a model for {info.game}, not for {game.name}")
    try:
        return game.with_encoder(info.encoder_version)
    except ValueError:
        raise ModelMismatchError(
            f"{info.path} was trained with {game.name} encoder version {info.encoder_version}, "
            f"but this klent encodes {game.name} with version {game.encoder_version}"
        ) from None


def _check_fits(info: ModelInfo, session: ort.InferenceSession, game: Game) -> None:
    """Refuse a model whose tensors do not fit ``game`` (the one `_game_for` chose)."""
    obs_shape = next(i.shape for i in session.get_inputs() if i.name == INPUT_NAME)
    policy_shape = next(o.shape for o in session.get_outputs() if o.name == POLICY_OUTPUT)
    def fits(shape: list[int | str], wanted: tuple[int, ...]) -> bool:  # a named axis is dynamic
        return len(shape) == len(wanted) and all(isinstance(d, str) or d == w for d, w in zip(shape, wanted))

    if not fits(obs_shape[1:], game.observation_shape) or not fits(policy_shape[1:], (game.num_actions,)):
        raise ModelMismatchError(
            f"{info.path}: input {obs_shape} and policy {policy_shape} do not fit {game.name}'s "
            f"observations {list(game.observation_shape)} and {game.num_actions} actions"
        )
