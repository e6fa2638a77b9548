"""The header of an ONNX file (metadata, input and output names), read without ONNX Runtime.

Starting an ONNX Runtime session to learn which game a model plays costs a second or more and
the memory of the whole network; the answer sits in a few small protobuf fields at the top of
the file.  This module reads just those fields with the protobuf wire format (field number and
wire type in a varint tag, then a varint, a fixed 4 or 8 bytes, or a length and that many
bytes), skipping everything else (the weights) by its length, and needs neither ONNX Runtime
nor the ``onnx`` package (a training-only dependency).

The fields read, numbered as in ``onnx.proto``: ``ModelProto.graph`` = 7 and
``ModelProto.metadata_props`` = 14; ``StringStringEntryProto.key`` = 1, ``.value`` = 2;
``GraphProto.input`` = 11, ``GraphProto.output`` = 12; ``ValueInfoProto.name`` = 1.

A hostile file costs bounded work: one larger than protobuf's 2 GiB is refused before it is
read, and one whose messages hold more than `MAX_FIELDS` fields in all is refused once the walk
reaches that many (a real model has a few thousand nodes and weights; a file of zeros is a field
every two bytes, tens of millions of them).  The file is mapped, not read: the weights skipped
by their length are never loaded, so a 1 GB model costs the pages of its header.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator
from dataclasses import dataclass

_MODEL_GRAPH = 7
_MODEL_METADATA = 14
_ENTRY_KEY, _ENTRY_VALUE = 1, 2
_GRAPH_INPUT, _GRAPH_OUTPUT = 11, 12
_VALUE_INFO_NAME = 1

_VARINT, _FIXED64, _LENGTH, _FIXED32 = 0, 1, 2, 5
MAX_BYTES = 2**31  # protobuf's limit on one message: a model file beyond it cannot be parsed
MAX_FIELDS = 100_000  # fields walked in one file


@dataclass(frozen=True)
class OnnxHeader:
    """The metadata props and the graph's input and output names of an ONNX model."""

    metadata: dict[str, str]
    inputs: list[str]
    outputs: list[str]


def read_onnx_header(path: str | os.PathLike[str]) -> OnnxHeader:
    """The header of the ONNX file at ``path``; ValueError if it is not valid protobuf or
    beyond the bounds of the module docstring."""
    with open(path, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        if size > MAX_BYTES:
            raise ValueError(f"{size} bytes, more than protobuf's {MAX_BYTES}")
        # Unmapped when the last view of it goes, at the end of this function.
        data = memoryview(mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) if size else b"")
    walk = _Walk()
    metadata: dict[str, str] = {}
    inputs: list[str] = []
    outputs: list[str] = []
    for number, value in walk.fields(data):
        if number == _MODEL_METADATA:
            entry = dict(walk.fields(value))
            metadata[_text(entry.get(_ENTRY_KEY, b""))] = _text(entry.get(_ENTRY_VALUE, b""))
        elif number == _MODEL_GRAPH:
            for graph_number, info in walk.fields(value):
                if graph_number in (_GRAPH_INPUT, _GRAPH_OUTPUT):
                    names = inputs if graph_number == _GRAPH_INPUT else outputs
                    names.append(_text(dict(walk.fields(info)).get(_VALUE_INFO_NAME, b"")))
    return OnnxHeader(metadata, inputs, outputs)


class _Walk:
    """Walks protobuf messages, at most `MAX_FIELDS` fields in all."""

    def __init__(self) -> None:
        self.left = MAX_FIELDS

    def fields(self, data: memoryview) -> Iterator[tuple[int, memoryview]]:
        """The length-delimited fields of one protobuf message, as (field number, bytes); the
        others (numbers, fixed-size values) are skipped, since no field read here is one."""
        position = 0
        while position < len(data):
            self.left -= 1
            if self.left < 0:
                raise ValueError(f"more than {MAX_FIELDS} protobuf fields")
            tag, position = _varint(data, position)
            number, wire_type = tag >> 3, tag & 7
            if wire_type == _VARINT:
                _, position = _varint(data, position)
            elif wire_type in (_FIXED64, _FIXED32):
                position += 8 if wire_type == _FIXED64 else 4
            elif wire_type == _LENGTH:
                length, position = _varint(data, position)
                if position + length > len(data):
                    raise ValueError("truncated protobuf field")
                yield number, data[position : position + length]
                position += length
            else:
                raise ValueError(f"unsupported protobuf wire type {wire_type}")
        if position != len(data):
            raise ValueError("truncated protobuf field")


def _varint(data: memoryview, position: int) -> tuple[int, int]:
    """The varint starting at ``position`` and the position after it."""
    value, shift = 0, 0
    while True:
        if position >= len(data) or shift > 63:
            raise ValueError("malformed protobuf varint")
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, position
        shift += 7


def _text(data: memoryview | bytes) -> str:
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("a protobuf string is not UTF-8") from None
