"""Secrets cut across streamed pieces: a reply streamed in fragments can split a key between
two ``text_delta`` events (or two cassette chunks), where no fragment alone holds it.

Each stream's pieces are joined and redacted whole; when the whole held a secret, the first
piece takes the redacted whole and the others are emptied, so no fragment keeps part of it.
Pieces are changed in place: ``(container, key)`` pairs naming a string (or None) each.

>>> from agentnb.tracing.redact import Redactor
>>> events = [{"kind": "text_delta", "text": "key sk-abcdefgh"}, {"kind": "text_delta", "text": "ijklmnop1234."}]
>>> hide_split_in_events(events, Redactor().redact)
>>> [e["text"] for e in events]
['key ***.', '']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentnb.tracing.redact import scrub

Piece = tuple[Any, Any]  # (a dict or list, the key or index of a string in it)


def scrub_transcript(data: Any, redact: Callable[[str], str]) -> Any:
    """A transcript's JSON data (or None) with every string redacted, and the secrets a stream cut
    across its deltas hidden (see :func:`agentnb.tracing.redact.scrub`)."""
    clean = scrub(data, redact)
    if isinstance(clean, dict) and isinstance(clean.get("events"), list):
        hide_split_in_events(clean["events"], redact)
    return clean


def hide_split(pieces: list[Piece], redact: Callable[[str], str]) -> None:
    """Redact the joined text of ``pieces``; if it held a secret, the first piece takes it all."""
    present = [(c, k) for c, k in pieces if isinstance(c[k], str)]
    if len(present) < 2:
        return
    joined = "".join(c[k] for c, k in present)
    hidden = redact(joined)
    if hidden == joined or "".join(redact(c[k]) for c, k in present) == hidden:
        return  # no secret, or none cut: each piece's own redaction hides it
    for n, (c, k) in enumerate(present):
        c[k] = hidden if n == 0 else ""


def hide_split_in_events(events: list[Any], redact: Callable[[str], str]) -> None:
    """The deltas of each model step (a sub-agent's too), in events as :meth:`to_dict` writes them."""
    groups: dict[tuple[Any, ...], list[Piece]] = {}

    def flush(path: tuple[Any, ...]) -> None:
        for key in [k for k in groups if k[0] == path]:
            hide_split(groups.pop(key), redact)

    for event in events:
        path: tuple[Any, ...] = ()
        while isinstance(event, dict) and event.get("kind") == "sub_agent" and isinstance(event.get("event"), dict):
            path += (event.get("call_id"),)
            event = event["event"]
        if not isinstance(event, dict):
            continue
        kind = event.get("kind")
        if kind == "text_delta":
            groups.setdefault((path, "text"), []).append((event, "text"))
        elif kind == "tool_call_delta":
            index = event.get("index")
            groups.setdefault((path, "name", index), []).append((event, "name"))
            groups.setdefault((path, "arguments", index), []).append((event, "arguments"))
        elif kind in ("model_request", "model_response"):
            flush(path)
    for pieces in groups.values():
        hide_split(pieces, redact)


def hide_split_in_chunks(chunks: list[list[Any]], redact: Callable[[str], str]) -> None:
    """A cassette entry's chunks: ``["text", text]`` and ``["call", index, id, name, arguments]``."""
    groups: dict[tuple[Any, ...], list[Piece]] = {}
    for chunk in chunks:
        if chunk[0] == "text":
            groups.setdefault(("text",), []).append((chunk, 1))
        else:
            groups.setdefault(("name", chunk[1]), []).append((chunk, 3))
            groups.setdefault(("arguments", chunk[1]), []).append((chunk, 4))
    for pieces in groups.values():
        hide_split(pieces, redact)
