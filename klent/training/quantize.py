"""int8 models: ONNX Runtime static quantization of a klent model, calibrated on its own play.

    quantize("weights/go9.onnx", "/tmp/go9-int8.onnx", positions=1024, games=32)  # -> Parity

Why static QDQ quantization: on a CPU the network bounds everything klent does, and ONNX
Runtime's int8 kernels (fed by QuantizeLinear/DequantizeLinear pairs, the format its CPU
kernels are written for) run a convolution on 8-bit integers.  Static means the activation
ranges are fixed once, from calibration positions, instead of measured at every call.

Why the model's own play: activation ranges depend on the positions the network sees.  The
calibration positions come from reactive self-play of the model being quantized (with a share
of uniformly random moves, so that the games differ and leave the model's favourite lines), the
positions a search with it will meet.  The parity report uses positions from other games than
the calibration ones, so it measures what the quantized model does on positions it was not
fitted to.

The data types follow ONNX Runtime's advice for x86 CPUs (``quantize_static``'s docstring):
uint8 activations, int8 weights per output channel, and 7-bit weights (``reduce_range``).  An
x86 CPU without VNNI multiplies uint8 by int8 with ``vpmaddubsw``, whose pairwise sums saturate
at 16 bits; 7-bit weights keep them in range.  Whether 8 bits go wrong depends on the CPU and
on ONNX Runtime's kernels for it, where the model later runs, not where it was made.  On
2026-11-26, on this project's AVX2-only AMD EPYC with the ONNX Runtime of that day (version not
recorded), 8 bits did a little better (top-1 agreement go9 95.8 % against 95.5 %); on the same
kind of CPU with ONNX Runtime 1.32 they broke the Go models (2026-11-28, benchmarks/RESULTS.md
"int8 models": the shipped go9 model's top-1 agreement 89.0 % with 8 bits against 96.9 % with
7, mean |dQ| 0.042 against 0.014), while chess lost little either way (95.5 % and 95.2 %; |dQ|
0.012 and 0.021).  7 bits are the choice that holds wherever the model goes.

Why the graph is rewritten first, and which layers stay float (measured on the shipped go9
model, 2026-11-25, docs/experiments/2026-11-25-int8.md): ONNX Runtime runs an int8 convolution
in the NHWC layout, and every operator left in float32 between two int8 ones costs a
DequantizeLinear, a QuantizeLinear and two layout transposes.  The pre-activation residual
blocks start with a batch norm that cannot be folded into a convolution (the skip path needs
the un-normalised stream), and a float stem convolution keeps the residual stream in NCHW;
quantized as the first version did, the graph kept 18 dequantizations and 16 transposes and ran
at 1.3-1.6x float32 at batch 16.  So the batch norms become the 1 x 1 depthwise convolutions
they are (`batch_norms_as_convolutions`), ReLU is quantized so that ONNX Runtime fuses it into
the convolution before it, and the stem is quantized too: 4 dequantizations and 5 transposes
remain (at the heads' outputs), and batch 16 runs at about 2x.  Activation ranges come from
the 99.999th percentile of the calibration values rather than their extremes: a few outlying
activations no longer stretch the 256 steps over the whole tensor (go9 with a float stem: mean
|dQ| 0.016 against 0.023 with min-max ranges).

Why here, in klent/training/ and not in klent/engine/: quantization makes a model file, like
`klent.training.export`, and ``onnxruntime.quantization`` imports the ``onnx`` package, a dependency of
the train extra only.  It needs no torch.  The engine plays the result like any other model;
all it reads is the ``klent.quantization`` metadata (`klent.engine.network.ModelInfo.quantization`).
"""

from __future__ import annotations

import datetime
import json
import os
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper
from onnxruntime.quantization import (
    CalibrationDataReader,
    CalibrationMethod,
    QuantFormat,
    QuantType,
    quant_pre_process,
    quantize_static,
)

from klent.engine.files import atomic_target, write_text_atomically
from klent.engine.games.base import Game, State
from klent.engine.network import INPUT_NAME, META_QUANTIZATION, OnnxEvaluator
from klent.engine.search.reactive import reactive

SCHEME = "int8-qdq"
RANDOM_MOVE_RATE = 0.2  # share of uniformly random moves in the calibration and parity games
CALIBRATION_BATCH = 32  # observations per calibration inference
CALIBRATION_PERCENTILE = 99.999  # activation ranges: this percentile of the calibration values
WEIGHTED_OPS = ("Conv", "Gemm", "MatMul")
# The operators ONNX Runtime's CPU provider runs on int8 (QLinearConv, QGemm, QLinearMatMul,
# QLinearAdd), and ReLU, which it fuses into the convolution before it.  Batch norms are
# rewritten as convolutions first (`batch_norms_as_convolutions`).
INT8_OPS = (*WEIGHTED_OPS, "Add", "Relu")


@dataclass(frozen=True)
class Parity:
    """How closely a quantized model follows its float32 original on the same positions.

    ``top1_agreement``: share of positions where both pick the same move (argmax of the masked
    policy); ``max_top1_gap``: where they differ, how much less probability the float32 policy
    gives the quantized model's move than its own (the largest such gap: near 0 when only
    near-ties flip, as in chess positions with many equal moves); ``mean_abs_dq``: mean
    |Q_fp32 - Q_int8| over the legal moves of all positions; ``mean_kl``: mean
    KL(pi_fp32 || pi_int8) of the policies, in nats.
    """

    positions: int
    games: int
    top1_agreement: float
    max_top1_gap: float
    mean_abs_dq: float
    max_abs_dq: float
    mean_kl: float

    def summary(self) -> str:
        return (
            f"top-1 agreement {self.top1_agreement:.1%} (largest float32 probability gap where they differ "
            f"{self.max_top1_gap:.3f}), mean |dQ| {self.mean_abs_dq:.4f} (max {self.max_abs_dq:.3f}), "
            f"mean KL {self.mean_kl:.5f} nats, on {self.positions} held-out positions from {self.games} games"
        )


def parity_path(model_path: str | os.PathLike[str]) -> Path:
    """Where the parity report of the quantized model at ``model_path`` goes: beside it."""
    path = Path(model_path)
    return path.with_name(f"{path.stem}.parity.json")


def self_play_positions(evaluator: OnnxEvaluator, games: int, count: int, rng: np.random.Generator) -> list[State]:
    """``count`` positions (fewer if the games are short) drawn from ``games`` games of the
    model against itself, all games advanced together so that each move is one batch."""
    played: list[State] = []
    states = [evaluator.game.initial_state() for _ in range(games)]
    while states:
        played += states
        choices = reactive(states, evaluator)
        following = []
        for state, choice in zip(states, choices):
            action = choice.action
            if rng.random() < RANDOM_MOVE_RATE:
                action = int(rng.choice(state.legal_actions()))
            after = state.play(action)
            if not after.is_terminal:
                following.append(after)
        states = following
    picked = rng.choice(len(played), size=min(count, len(played)), replace=False)
    return [played[i] for i in sorted(picked)]


def float_layers(model: onnx.ModelProto) -> list[str]:
    """The names of the layers that stay float32: the last one before each output.

    Measured on the shipped go9 and chess models: quantizing the output layers rounds the
    policy logits and pre-tanh action values to 256 steps over their whole range, which flipped
    the top move in a tenth of the chess positions (top-1 agreement 78 % against 90 % with them
    float).  The first layer is quantized: kept float, go9's mean |dQ| was 0.016 instead of
    0.020, but batch 16 ran at 1.6x float32 instead of 2.0x (module docstring).
    """
    producer = {output: node for node in model.graph.node for output in node.output}
    names: list[str] = []
    for output in model.graph.output:
        node = producer.get(output.name)
        while node is not None and node.op_type not in WEIGHTED_OPS:  # Reshape, Tanh, Squeeze, ...
            node = producer.get(node.input[0])
        if node is not None and node.name not in names:
            names.append(node.name)
    return names


def batch_norms_as_convolutions(model: onnx.ModelProto) -> None:
    """Replace every BatchNormalization (inference form) of ``model`` by the 1 x 1 depthwise
    convolution that computes the same per-channel affine map, in place.

    ONNX Runtime has no int8 batch norm; left in float32 it splits the int8 graph (module
    docstring), while a depthwise convolution runs as QLinearConv.  With per-channel weights
    each channel's single weight is exactly the top of its int8 range, so the rewrite costs no
    weight precision.
    """
    tensors = {tensor.name: tensor for tensor in model.graph.initializer}
    nodes = []
    for node in model.graph.node:
        if node.op_type != "BatchNormalization":
            nodes.append(node)
            continue
        source, *parameters = node.input
        scale, bias, mean, variance = (numpy_helper.to_array(tensors[name]) for name in parameters)
        epsilon = next((attribute.f for attribute in node.attribute if attribute.name == "epsilon"), 1e-5)
        factor = (scale / np.sqrt(variance + epsilon)).astype(np.float32)
        weight = numpy_helper.from_array(factor.reshape(-1, 1, 1, 1), f"{node.name}.depthwise.weight")
        offset = numpy_helper.from_array((bias - mean * factor).astype(np.float32), f"{node.name}.depthwise.bias")
        model.graph.initializer.extend([weight, offset])
        nodes.append(
            onnx.helper.make_node(
                "Conv",
                [source, weight.name, offset.name],
                [node.output[0]],
                name=f"{node.name}.depthwise",
                group=len(factor),
                kernel_shape=[1, 1],
            )
        )
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    used = {name for node in nodes for name in node.input}
    unused = [tensor for tensor in model.graph.initializer if tensor.name not in used]
    for tensor in unused:  # the batch norms' parameters
        model.graph.initializer.remove(tensor)


class ObservationReader(CalibrationDataReader):
    """ONNX Runtime's calibration input: the encoded observations of ``states``, in batches."""

    def __init__(self, game: Game, states: Sequence[State]) -> None:
        self._batches: Iterator[np.ndarray] = (
            game.encode_batch(states[start : start + CALIBRATION_BATCH])
            for start in range(0, len(states), CALIBRATION_BATCH)
        )

    def get_next(self) -> dict[str, np.ndarray] | None:
        batch = next(self._batches, None)
        return None if batch is None else {INPUT_NAME: batch}


def quantize_model(
    source: str | os.PathLike[str], target: str | os.PathLike[str], game: Game, calibration: Sequence[State], games: int
) -> None:
    """Write the int8 version of the model at ``source`` to ``target`` (atomically), its
    activation ranges calibrated on ``calibration`` (from ``games`` games), its metadata the
    source's plus ``klent.quantization``."""
    with tempfile.TemporaryDirectory() as folder:
        prepared = os.path.join(folder, "prepared.onnx")
        quantized = os.path.join(folder, "quantized.onnx")
        # Shape inference and graph optimisation (batch norms after a convolution folded into
        # it), so that the quantizer sees the graph ONNX Runtime will run; then the batch norms
        # left (those that start a pre-activation block) become convolutions.
        quant_pre_process(os.fspath(source), prepared, skip_symbolic_shape=True)
        graph = onnx.load(prepared)
        batch_norms_as_convolutions(graph)
        onnx.save(graph, prepared)
        quantize_static(
            prepared,
            quantized,
            ObservationReader(game, calibration),
            quant_format=QuantFormat.QDQ,
            op_types_to_quantize=list(INT8_OPS),
            nodes_to_exclude=float_layers(graph),
            per_channel=True,
            reduce_range=True,  # 7-bit weights: see the module docstring
            activation_type=QuantType.QUInt8,
            weight_type=QuantType.QInt8,
            calibrate_method=CalibrationMethod.Percentile,
            extra_options={"CalibPercentile": CALIBRATION_PERCENTILE},
        )
        model = onnx.load(quantized)
        metadata = {
            entry.key: entry.value for entry in onnx.load(os.fspath(source), load_external_data=False).metadata_props
        }
        metadata[META_QUANTIZATION] = json.dumps(
            {
                "scheme": SCHEME,
                "activations": f"uint8, per tensor, {CALIBRATION_PERCENTILE} percentile calibrated",
                "weights": "int8 in a 7-bit range, per output channel",
                "calibration_positions": str(len(calibration)),
                "calibration_games": str(games),
                "date": datetime.date.today().isoformat(),
            },
            sort_keys=True,
        )
        del model.metadata_props[:]
        for key, value in metadata.items():
            model.metadata_props.add(key=key, value=value)
        with atomic_target(target) as tmp:
            onnx.save(model, tmp)


def measure_parity(reference: OnnxEvaluator, candidate: OnnxEvaluator, states: Sequence[State], games: int) -> Parity:
    """`Parity` of ``candidate`` against ``reference`` on ``states`` (from ``games`` games)."""
    agree, gap_max, dq_sum, dq_max, legal, kl_sum = 0, 0.0, 0.0, 0.0, 0, 0.0
    for start in range(0, len(states), CALIBRATION_BATCH):
        batch = states[start : start + CALIBRATION_BATCH]
        ours, theirs = reference.evaluate(batch), candidate.evaluate(batch)
        masks = np.stack([s.legal_mask() for s in batch])
        log_p, log_q = _log_softmax(ours.policy_logits), _log_softmax(theirs.policy_logits)
        p = np.exp(log_p)
        rows = np.arange(len(batch))
        our_top, their_top = log_p.argmax(axis=1), log_q.argmax(axis=1)
        agree += int((our_top == their_top).sum())
        gap_max = max(gap_max, float((p[rows, our_top] - p[rows, their_top]).max()))
        dq = np.abs(ours.action_values - theirs.action_values)[masks]
        dq_sum += float(dq.sum())
        dq_max = max(dq_max, float(dq.max()))
        legal += int(masks.sum())
        kl_sum += float((p * (log_p - log_q)).sum())  # illegal moves: p = 0
    count = len(states)
    return Parity(count, games, agree / count, gap_max, dq_sum / legal, dq_max, kl_sum / count)


def _log_softmax(logits: np.ndarray) -> np.ndarray:
    """log softmax over the last axis, in float64 (masked logits stay finite)."""
    shifted = logits.astype(np.float64) - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def check_arguments(source: str | os.PathLike[str], target: str | os.PathLike[str], positions: int, games: int) -> None:
    """ValueError for arguments `quantize` refuses, before any work is done."""
    if positions < 1 or games < 1:
        raise ValueError("the numbers of calibration positions and games must be at least 1")
    if os.path.abspath(source) == os.path.abspath(target):
        raise ValueError(f"{target}: the quantized model would overwrite its float32 source")


def quantize(
    source: str | os.PathLike[str],
    target: str | os.PathLike[str],
    positions: int,
    games: int,
    seed: int = 0,
) -> Parity:
    """Quantize the klent model at ``source`` into ``target`` and report its parity.

    ``positions`` calibration positions come from ``games`` self-play games of the float32
    model; as many positions from as many other games measure the parity, which is also
    written as JSON beside ``target`` (`parity_path`).
    """
    check_arguments(source, target, positions, games)
    reference = OnnxEvaluator(source)
    rng = np.random.default_rng(seed)
    calibration = self_play_positions(reference, games, positions, rng)
    held_out = self_play_positions(reference, games, positions, rng)
    quantize_model(source, target, reference.game, calibration, games)
    report = measure_parity(reference, OnnxEvaluator(target, reference.game), held_out, games)
    write_text_atomically(parity_path(target), json.dumps(asdict(report), indent=2) + "\n")
    return report
