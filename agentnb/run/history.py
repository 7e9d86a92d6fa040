"""A read-only view of the first ``n`` messages of a growing list: a snapshot in O(1).

A run's transcript only ever grows by appending, so the first ``n`` items of its list never
change. Each model request gets such a view instead of a copy of the whole history, which
keeps a step's cost flat however long the run gets.

>>> items = ["a", "b"]
>>> view = MessageView(items)
>>> items.append("c")
>>> len(view), view[-1], list(view), view == ("a", "b")
(2, 'b', ['a', 'b'], True)
>>> view[1:] + ("z",)
('b', 'z')
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import Any, TypeVar, overload

T = TypeVar("T")


class MessageView(Sequence[T]):
    """The first ``len(items)`` (at creation) items of an append-only list, frozen."""

    __slots__ = ("_items", "_n")

    def __init__(self, items: list[T]) -> None:
        self._items = items
        self._n = len(items)

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[T, ...]: ...
    def __getitem__(self, index: int | slice) -> T | tuple[T, ...]:
        if isinstance(index, slice):
            return tuple(self._items[: self._n][index])
        n = self._n
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError("message index out of range")
        return self._items[index]

    def __iter__(self) -> Iterator[T]:
        return itertools.islice(self._items, self._n)

    def __reversed__(self) -> Iterator[T]:
        items = self._items
        return (items[i] for i in range(self._n - 1, -1, -1))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (MessageView, tuple, list)):
            return len(other) == self._n and all(a == b for a, b in zip(self, other, strict=False))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __add__(self, other: Any) -> Any:
        return (tuple(self) + tuple(other)) if not isinstance(other, list) else list(self) + other

    def __repr__(self) -> str:
        return f"MessageView({list(self)!r})"
