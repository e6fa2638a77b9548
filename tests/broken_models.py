"""Model files that break at load or at play, built with the ``onnx`` package, for the tests of
how every front door (GTP, UCI, HTTP, `klent quantize`) answers a model it cannot use.

Each is a klent model in form (input ``obs``, outputs ``policy_logits`` and ``action_values``
shaped for its game, klent metadata) whose network is a few nodes: all-zero outputs plus one
term that breaks.  They are small and built in milliseconds, without torch.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import klent.engine.games as games
from klent.engine.network import (
    ACTION_VALUE_OUTPUT,
    INPUT_NAME,
    META_ARCH,
    META_ENCODER,
    META_GAME,
    META_TRAINING,
    POLICY_OUTPUT,
)

OPSET = 18
HUGE = 1 << 40  # elements: 4 TiB of float32, more than any machine allocates


def _model(game_id: str, path: Path, term: list[onnx.NodeProto], initializers: list[TensorProto],
           training: str = '{"algorithm": "broken"}') -> str:
    """A klent model for ``game_id`` at ``path`` whose outputs are zeros plus ``term``'s output
    ``bad`` (a float scalar per batch row, [B, 1]), written by the ``onnx`` package."""
    game = games.get(game_id)
    zeros = numpy_helper.from_array(np.zeros((1, game.num_actions), np.float32), "zeros")
    nodes = [
        *term,
        helper.make_node("Add", ["bad", "zeros"], [POLICY_OUTPUT]),
        helper.make_node("Identity", [POLICY_OUTPUT], [ACTION_VALUE_OUTPUT]),
    ]
    obs = helper.make_tensor_value_info(INPUT_NAME, TensorProto.FLOAT, ["batch", *game.observation_shape])
    outputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, ["batch", game.num_actions])
               for name in (POLICY_OUTPUT, ACTION_VALUE_OUTPUT)]
    graph = helper.make_graph(nodes, "broken", [obs], outputs, [zeros, *initializers])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    for key, value in {META_GAME: game.name, META_ENCODER: str(game.encoder_version), META_ARCH: "broken",
                       META_TRAINING: training}.items():
        model.metadata_props.add(key=key, value=value)
    onnx.save(model, path)
    return str(path)


def _constant(tensor: TensorProto, name: str) -> onnx.NodeProto:
    return helper.make_node("Constant", [], [name], value=tensor)


def _row_sums() -> list[onnx.NodeProto]:
    """``sums``: ``obs`` summed per batch row, [B, 1]."""
    return [
        _constant(numpy_helper.from_array(np.array([1, 2, 3], np.int64)), "axes"),
        helper.make_node("ReduceSum", [INPUT_NAME, "axes"], ["total"], keepdims=0),
        _constant(numpy_helper.from_array(np.array([1], np.int64)), "one"),
        helper.make_node("Unsqueeze", ["total", "one"], ["sums"]),
    ]


def _zero_term() -> list[onnx.NodeProto]:
    """``bad`` = 0 times ``obs``'s sums: a model whose outputs are all zero."""
    zero = numpy_helper.from_array(np.zeros((1, 1), np.float32))
    return [*_row_sums(), _constant(zero, "zero_scale"), helper.make_node("Mul", ["sums", "zero_scale"], ["bad"])]


def huge_allocation_model(game_id: str, path: Path) -> str:
    """A model whose every evaluation asks ONNX Runtime for 4 TiB (``obs``'s sum expanded to
    `HUGE` elements): it loads, and fails at the load-time probe."""
    shape = numpy_helper.from_array(np.array([HUGE], np.int64), "huge_shape")
    axes = numpy_helper.from_array(np.array([1], np.int64), "huge_axes")
    term = [
        *_row_sums(),
        helper.make_node("Expand", ["sums", "huge_shape"], ["expanded"]),  # [B, HUGE]
        helper.make_node("ReduceSum", ["expanded", "huge_axes"], ["bad"], keepdims=1),
    ]
    return _model(game_id, path, term, [shape, axes])


def nested_metadata_model(game_id: str, path: Path, depth: int = 100_000) -> str:
    """A model whose ``klent.training`` metadata is ``depth`` nested JSON arrays."""
    return _model(game_id, path, _zero_term(), [], training="[" * depth)


def nan_after_a_move_model(game_id: str, path: Path) -> str:
    """A model finite on the game's initial position and NaN on every other: its outputs add
    sqrt(-d), d the squared distance of ``obs`` from the initial position's encoding, which is
    sqrt(-0) = -0 there and NaN wherever d > 0 (after any move)."""
    game = games.get(game_id)
    initial = numpy_helper.from_array(game.encode_batch([game.initial_state()]), "initial")
    axes = numpy_helper.from_array(np.array([1, 2, 3], np.int64), "all_axes")
    term = [
        helper.make_node("Sub", [INPUT_NAME, "initial"], ["difference"]),
        helper.make_node("Mul", ["difference", "difference"], ["squares"]),
        helper.make_node("ReduceSum", ["squares", "all_axes"], ["distance"], keepdims=0),
        helper.make_node("Neg", ["distance"], ["negative"]),
        helper.make_node("Sqrt", ["negative"], ["root"]),
        _constant(numpy_helper.from_array(np.array([1], np.int64)), "unsqueeze_axis"),
        helper.make_node("Unsqueeze", ["root", "unsqueeze_axis"], ["bad"]),
    ]
    return _model(game_id, path, term, [initial, axes])


def nan_from_stones_model(path: Path, stones: int = 3) -> str:
    """A 9x9 Go model finite while the board holds fewer than ``stones`` stones and NaN from
    then on (sqrt(stones - 1/2 - count)): it passes a load-time probe and a short search from
    the empty board, and fails on later positions (planes 0 and 8 hold the stones of the side to
    move and of the other, encoder version 1)."""
    slices = [numpy_helper.from_array(np.array(values, np.int64), name) for name, values in
              (("stone_starts", [0]), ("stone_ends", [1]), ("stone_axes", [1]), ("other_starts", [8]),
               ("other_ends", [9]), ("all_axes", [1, 2, 3]))]
    limit = numpy_helper.from_array(np.array(stones - 0.5, np.float32), "limit")
    term = [
        helper.make_node("Slice", [INPUT_NAME, "stone_starts", "stone_ends", "stone_axes"], ["own"]),
        helper.make_node("Slice", [INPUT_NAME, "other_starts", "other_ends", "stone_axes"], ["other"]),
        helper.make_node("Add", ["own", "other"], ["both"]),
        helper.make_node("ReduceSum", ["both", "all_axes"], ["count"], keepdims=0),
        helper.make_node("Sub", ["limit", "count"], ["room"]),
        helper.make_node("Sqrt", ["room"], ["root"]),
        _constant(numpy_helper.from_array(np.array([1], np.int64)), "unsqueeze_axis"),
        helper.make_node("Unsqueeze", ["root", "unsqueeze_axis"], ["bad"]),
    ]
    return _model("go9", path, term, [*slices, limit])
