"""Observations kept as bits: a labelled set of a million chess positions in memory.

A chess observation is 119 planes of 8x8; as float16 that is 15 kB a position, so the 600 k
positions of a few teacher-hours (`klent.training.teacher`) would take 9 GB per training process.
Almost every plane is 0/1 (pieces, repetitions, castling rights); the few that are not (chess's
move counter, Go's komi) are scalars spread over a plane.  `PackedPlanes` keeps every plane as
bits and, beside them, the exact float16 values of the planes found to hold anything but 0 and
1 -- found while filling, since a plane can be 0/1 in the first positions and not later (the
move counter is 0 at the start).  Chess then costs 1.2 kB a position, a 13th.  Reading gives
back exactly the observations put in (to float16 precision on the non-binary planes, as before).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

_CHUNK = 4096  # rows unpacked at a time when a plane is first found not to be 0/1


@dataclass
class PackedPlanes:
    """``count`` observations of one ``shape`` (C, H, W): `put` them by row, read any rows
    back as float32 with ``planes[index]``."""

    shape: tuple[int, ...]
    bits: np.ndarray  # uint8[N, ceil(C * H * W / 8)]: each value != 0
    exact: dict[int, np.ndarray] = field(default_factory=dict)  # plane -> float16[N, H * W]

    @classmethod
    def empty(cls, count: int, shape: tuple[int, ...]) -> PackedPlanes:
        size = int(np.prod(shape))
        return cls(tuple(shape), np.zeros((count, (size + 7) // 8), dtype=np.uint8))

    @classmethod
    def from_array(cls, observations: np.ndarray) -> PackedPlanes:
        """Observations given as one array [N, C, H, W]."""
        packed = cls.empty(len(observations), observations.shape[1:])
        for row, observation in enumerate(observations):
            packed.put(row, observation)
        return packed

    def __len__(self) -> int:
        return len(self.bits)

    @property
    def _size(self) -> int:
        """Values in one observation."""
        return int(np.prod(self.shape))

    @property
    def _plane_size(self) -> int:
        return int(np.prod(self.shape[1:]))

    def put(self, row: int, observation: np.ndarray) -> None:
        """Store ``observation`` (shape `shape`) at ``row``; rows are filled in order."""
        planes = observation.reshape(self.shape[0], -1)
        self.bits[row] = np.packbits(planes != 0)
        for plane in np.flatnonzero(((planes != 0) & (planes != 1)).any(axis=1)):
            if int(plane) not in self.exact:
                self.exact[int(plane)] = self._plane_from_bits(int(plane), row)
        for plane, values in self.exact.items():
            values[row] = planes[plane]

    def _plane_from_bits(self, plane: int, rows: int) -> np.ndarray:
        """A float16 copy of ``plane`` for every row, the first ``rows`` read from the bits
        (which are exact there: the plane was 0/1 in them)."""
        values = np.zeros((len(self), self._plane_size), dtype=np.float16)
        start, end = plane * self._plane_size, (plane + 1) * self._plane_size
        for first in range(0, rows, _CHUNK):
            last = min(first + _CHUNK, rows)
            values[first:last] = np.unpackbits(self.bits[first:last], axis=1, count=self._size)[:, start:end]
        return values

    def __getitem__(self, index: np.ndarray) -> np.ndarray:
        """The observations of rows ``index`` as float32 [n, C, H, W]."""
        rows = self.bits[index]
        out = np.unpackbits(rows, axis=1, count=self._size).astype(np.float32)
        out = out.reshape(len(rows), self.shape[0], -1)
        for plane, values in self.exact.items():
            out[:, plane] = values[index]
        return out.reshape(len(rows), *self.shape)

    def take(self, rows: int) -> PackedPlanes:
        """The first ``rows`` rows (a set filled short of its room)."""
        return PackedPlanes(self.shape, self.bits[:rows], {p: v[:rows] for p, v in self.exact.items()})

    @classmethod
    def concatenate(cls, parts: list[PackedPlanes]) -> PackedPlanes:
        """The rows of ``parts`` (of one shape) in order; a plane exact in any part is exact in all."""
        shape = parts[0].shape
        planes = sorted({plane for part in parts for plane in part.exact})
        exact = {}
        for plane in planes:
            exact[plane] = np.concatenate([
                part.exact[plane] if plane in part.exact else part._plane_from_bits(plane, len(part))
                for part in parts
            ])
        return cls(shape, np.concatenate([part.bits for part in parts]), exact)
