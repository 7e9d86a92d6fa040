"""Cassettes: every model call recorded at the Provider seam, and answered from the file next time.

``Agent(..., cassette="calls.jsonl")`` or ``with agentnb.cassette("calls.jsonl", mode="once"):``
(every agent run inside the block, agents used as tools and concurrent evaluation runs too).
It sits at the Provider seam, not the HTTP layer, so the in-process model, UnTooled over a text
server, a FallbackProvider and every API are covered alike, and what is keyed is what the model
was asked (the canonical request), not the bytes of one wire protocol.

Modes (as vcrpy's): ``once`` records when the file is missing, else only replays; ``replay``
only replays; ``record`` records every call again (a fresh file); ``new`` replays what is there
and records what is not. A call not in the cassette, in ``once`` or ``replay`` mode, raises
:class:`CassetteMiss` showing the nearest recorded request and where it differs.

>>> import os, tempfile
>>> from agentnb import Agent
>>> from agentnb.testing import ScriptedProvider
>>> path = os.path.join(tempfile.mkdtemp(), "calls.jsonl")
>>> with cassette(path):
...     Agent(ScriptedProvider(["Hi!"])).run("hello").output
'Hi!'
>>> with cassette(path):  # answered from the file: the scripted model has nothing left
...     Agent(ScriptedProvider([])).run("hello").output
'Hi!'
"""

from __future__ import annotations

import contextlib
import os
import threading
import warnings
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, Literal

from agentnb.errors import ProviderError, UserError
from agentnb.providers.base import Chunk, Completion, Provider, Request, TextChunk, model_name
from agentnb.timetravel.active import CURRENT
from agentnb.timetravel.canonical import canonical_request, first_difference, request_key
from agentnb.timetravel.entries import (
    CassetteError,
    Entry,
    check_header,
    cut_torn_tail,
    entry_line,
    header_line,
    is_cassette_header,
    is_torn,
    read_entry,
    scrub,
)
from agentnb.timetravel.mismatch import ReplayMismatch
from agentnb.tracing.redact import Redactor, Secret

Mode = Literal["once", "replay", "record", "new"]
MODES = ("once", "replay", "record", "new")


class CassetteMiss(ReplayMismatch):
    """A call that the cassette does not hold, in a mode that may not record it: the message
    shows the nearest recorded request and where it differs.

    >>> import os, tempfile
    >>> from agentnb import Agent
    >>> from agentnb.testing import ScriptedProvider
    >>> path = os.path.join(tempfile.mkdtemp(), "calls.jsonl")
    >>> with cassette(path):
    ...     _ = Agent(ScriptedProvider(["4"])).run("2 + 2?")
    >>> with cassette(path, mode="replay"):
    ...     Agent(ScriptedProvider([])).run("2 + 3?")
    Traceback (most recent call last):
    ...
    agentnb.timetravel.cassette.CassetteMiss: cassette ...: the request differs from the recorded one at messages[0].content (nearest recorded call: line 2)
      recorded: '2 + 2?'
      now:      '2 + 3?'
    """


class Cassette:
    """A cassette file open in one mode: its recorded calls by key, and a writer for new ones.

    Lookups are one hash of the request and one dict access, however many calls are recorded.
    Writes append one whole line under an exclusive lock (``flock``), so runs in many tasks,
    threads and processes record into one file without losing or tearing an entry.
    """

    def __init__(self, path: str | os.PathLike[str], mode: Mode = "once") -> None:
        if mode not in MODES:
            raise UserError(f"cassette mode {mode!r} is not one of {', '.join(MODES)}")
        self.path = os.fspath(path)
        self.mode = mode
        exists = os.path.exists(self.path) and os.path.getsize(self.path) > 0
        if mode == "replay" and not exists:
            what = "the cassette is empty" if os.path.exists(self.path) else "no such cassette"
            raise UserError(f"{self.path}: {what} (mode='replay' only reads; use mode='once' to record one)")
        self.records = mode in ("record", "new") or (mode == "once" and not exists)
        self.replays = mode != "record" and exists
        self.by_key: dict[str, list[Entry]] = {}
        self.by_rkey: dict[str, list[Entry]] = {}
        self.entries: list[Entry] = []
        self._used: dict[str, int] = {}
        self._lock = threading.Lock()
        self._fd: int | None = None
        if self.replays:
            self._load()
        if mode == "record":
            self._start_file(truncate=True)

    def __repr__(self) -> str:
        return f"Cassette({self.path!r}, mode={self.mode!r}, calls={len(self.entries)})"

    def _load(self) -> None:
        with open(self.path, "rb") as f:
            raw = f.read()
        end = raw.rfind(b"\n") + 1  # a last line with no newline may be torn: read apart
        body, tail = raw[:end], raw[end:]
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            where = raw[: exc.start].count(b"\n") + 1
            raise CassetteError(f"{self.path}, line {where}: not UTF-8 text ({exc.reason})") from None
        lines = text.split("\n")[:-1] if body else [tail.decode("utf-8", "replace")]
        check_header(lines[0], self.path)
        for n, line in enumerate(lines[1:], start=2):
            if line.strip():
                self.add(read_entry(line, self.path, n))
        if body and tail.strip():
            self._last_line(tail, len(lines) + 1)

    def _last_line(self, tail: bytes, n: int) -> None:
        """A last line with no newline: an entry if it is whole, else torn (a writer killed mid-line)
        and skipped with a warning; the next recording cuts it off (``entries.cut_torn_tail``)."""
        if is_torn(tail):
            warnings.warn(f"cassette {self.path}: line {n}, the last, is torn (a writer stopped mid-line); skipped",
                          stacklevel=2)  # fmt: skip
            return
        self.add(read_entry(tail.decode("utf-8"), self.path, n))

    def add(self, entry: Entry) -> None:
        """Keep ``entry`` for lookups."""
        self.entries.append(entry)
        self.by_key.setdefault(entry.key, []).append(entry)
        self.by_rkey.setdefault(entry.rkey, []).append(entry)

    def find(self, request: dict[str, Any], by_model: bool = True) -> Entry | None:
        """The recorded answer to ``request`` (canonical, redacted): its calls in order, the
        last one again when the same call comes more often than it was recorded."""
        if by_model and request.get("model") is not None:
            k = request_key(request)
            found = self.by_key.get(k)
            if found is None:
                k = request_key({**request, "model": None})
                found = self.by_rkey.get(k)
        else:
            k = request_key({**request, "model": None}) if request.get("model") is not None else request_key(request)
            found = self.by_rkey.get(k)
        if not found:
            return None
        with self._lock:
            i = self._used.get(k, 0)
            self._used[k] = i + 1
        return found[min(i, len(found) - 1)]

    def write(
        self,
        request: dict[str, Any],
        completion: Completion,
        chunks: tuple[Chunk, ...],
        provider: str,
        redact: Callable[[str], str] | None = None,
    ) -> None:
        """Append one call as one line, atomically, every string in it redacted (``redact``:
        the provider's; None: what any :class:`~agentnb.tracing.redact.Redactor` hides)."""
        line = entry_line(request, completion, chunks, provider, redact)
        with self._lock:
            fd = self._start_file(truncate=False) if self._fd is None else self._fd
            with _locked(fd):
                os.write(fd, line)

    def _start_file(self, truncate: bool) -> int:
        flags = os.O_RDWR | os.O_CREAT | os.O_APPEND  # read too: a torn last line is looked at
        fd = os.open(self.path, flags, 0o644)
        with _locked(fd):
            if truncate:
                os.ftruncate(fd, 0)
            else:
                cut_torn_tail(fd, self.path)
            if os.fstat(fd).st_size == 0:
                os.write(fd, header_line())
        self._fd = fd
        return fd

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def miss(self, request: dict[str, Any], where: str) -> CassetteMiss:
        """The error for a call not recorded: the nearest recorded request and the difference."""
        best, score = None, -1
        for e in self.entries[-2000:]:  # an error path: a bounded scan
            s = _likeness(e.request, request)
            if s > score:
                best, score = e, s
        if best is None:
            return CassetteMiss(None, "(no call recorded)", "(empty cassette)", "a request", where=where)
        # The model is no reason for a miss (a lookup falls back to the same request of any
        # model), and replay(<cassette path>) knows none: what differs is in the rest.
        found = first_difference(_sans_model(best.request), _sans_model(request))
        field, a, b = found or ("request", "(no difference found)", "(no difference found)")
        return CassetteMiss(None, f"{field} (nearest recorded call: line {best.line})", a, b, where=where)


def _sans_model(request: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in request.items() if k != "model"}


def _likeness(a: dict[str, Any], b: dict[str, Any]) -> int:
    ma, mb = a.get("messages") or [], b.get("messages") or []
    n = 0
    for x, y in zip(ma, mb, strict=False):
        if x != y:
            break
        n += 1
    return n * 4 + (a.get("tools") == b.get("tools")) * 2 + (a.get("model") == b.get("model"))


@contextlib.contextmanager
def _locked(fd: int) -> Iterator[None]:
    try:
        import fcntl
    except ImportError:  # Windows: one process at a time
        yield
        return
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


def is_cassette(path: str | os.PathLike[str]) -> bool:
    """Whether the file at ``path`` starts with a cassette's header line."""
    try:
        with open(path, "rb") as f:
            first = f.readline(4096)
    except OSError:
        return False
    return is_cassette_header(first.decode("utf-8", "replace"))


@contextlib.contextmanager
def cassette(path: str | os.PathLike[str], mode: Mode = "once") -> Iterator[Cassette]:
    """Record (or answer) every model call of every agent run inside the block; see the module.

    >>> import os, tempfile
    >>> from agentnb import Agent
    >>> from agentnb.testing import ScriptedProvider
    >>> path = os.path.join(tempfile.mkdtemp(), "calls.jsonl")
    >>> with cassette(path, mode="once") as tape:  # no file yet: recorded
    ...     first = Agent(ScriptedProvider(["Hi!"])).run("hello")
    >>> with cassette(path, mode="replay") as tape:  # answered from the file, offline
    ...     Agent(ScriptedProvider([])).run("hello").output, len(tape.entries)
    ('Hi!', 1)
    """
    tape = Cassette(path, mode)
    token = CURRENT.set(tape)
    try:
        yield tape
    finally:
        CURRENT.reset(token)
        tape.close()


class CassetteProvider(Provider):
    """``inner`` behind a cassette (``inner`` None: replay only, as :func:`agentnb.replay` of a file)."""

    supports_native_tools = True
    supports_streaming = True

    def __init__(self, inner: Provider | None, tape: Cassette) -> None:
        self.inner = inner
        self.tape = tape
        self.name = inner.name if inner is not None else "cassette"
        self.model = model_name(inner)
        self._secrets = provider_secrets(inner)
        self.in_process = inner is None
        self.answers_summaries = inner is None  # a replay of a file answers a compaction's summariser too
        # requests are counted by the model behind only when every call goes to it (recording);
        # a cassette that may answer from the file estimates them, so an in-process model's
        # tokenizer stays unloaded (agentnb.context.size.exact_counter)
        self.counts_through = inner is not None and (tape.mode == "record" or (tape.mode == "once" and not tape.entries))

    def __repr__(self) -> str:
        return f"CassetteProvider({self.inner!r}, {self.tape!r})"

    def _request(self, request: Request) -> tuple[dict[str, Any], Callable[[str], str]]:
        """The canonical request, redacted, and the redaction used (the same for the reply)."""
        model = self.model if isinstance(self.model, str) else None
        redact = Redactor(self._secrets).redact
        return scrub(canonical_request(request, model), redact), redact

    def _hit(self, canon: dict[str, Any]) -> Entry | None:
        if not self.tape.replays:
            return None
        hit = self.tape.find(canon, by_model=self.inner is not None)
        if hit is None and (not self.tape.records or self.inner is None):
            raise self.tape.miss(canon, f"cassette {self.tape.path}")
        return hit

    async def complete(self, request: Request) -> Completion:
        canon, redact = self._request(request)
        hit = self._hit(canon)
        if hit is not None:
            return refused_again(hit.completion)
        if self.inner is None:
            raise self.tape.miss(canon, f"cassette {self.tape.path}")
        try:
            completion = await self.inner.complete(request)
        except ProviderError as exc:
            self._refused(canon, exc, redact)
            raise
        self.tape.write(canon, completion, (), type(self.inner).__name__, redact)
        return completion

    def _refused(self, canon: dict[str, Any], exc: ProviderError, redact: Callable[[str], str]) -> None:
        """A request the server refused as too long is recorded as such (a replay refuses it too:
        compaction then happens again, as it did)."""
        from agentnb.context.overflow import overflow_of

        if overflow_of(exc) is not None and self.inner is not None:
            said = Completion(str(exc), finish_reason=REFUSED)
            self.tape.write(canon, said, (), type(self.inner).__name__, redact)

    async def stream(self, request: Request) -> AsyncIterator[Chunk | Completion]:  # type: ignore[override]
        canon, redact = self._request(request)
        hit = self._hit(canon)
        if hit is not None:
            refused_again(hit.completion)
            for chunk in hit.chunks or ((TextChunk(hit.completion.text),) if hit.completion.text else ()):
                yield chunk
            yield hit.completion
            return
        if self.inner is None:
            raise self.tape.miss(canon, f"cassette {self.tape.path}")
        pieces: list[Chunk] = []
        completion = None
        try:
            async for item in self.inner.stream(request):
                if isinstance(item, Completion):
                    completion = item
                else:
                    pieces.append(item)
                yield item
        except ProviderError as exc:
            if not pieces:
                self._refused(canon, exc, redact)
            raise
        if completion is None:  # the loop says so; nothing to record
            return
        self.tape.write(canon, completion, tuple(pieces), type(self.inner).__name__, redact)


#: The finish reason of a recorded refusal (a server's context-length error).
REFUSED = "agentnb:context_overflow"


def refused_again(completion: Completion) -> Completion:
    """A recorded reply, or the recorded refusal raised again."""
    if completion.finish_reason == REFUSED:
        raise ProviderError(completion.text or "the server refused the request as too long", status=400)
    return completion


def provider_secrets(inner: Provider | None) -> tuple[str, ...]:
    """Every secret the provider (and what it wraps) holds in its
    :class:`~agentnb.tracing.redact.Secret`: key, header values, URL credentials."""
    found: list[str] = []
    todo, seen = [inner], 0
    while todo and seen < 16:
        p = todo.pop()
        seen += 1
        if p is None:
            continue
        for name in ("_key", "api_key", "key", "_api_key"):
            v = getattr(p, name, None)
            found.extend(getattr(v, "values", ()) if isinstance(v, Secret) else (v,) if isinstance(v, str) else ())
        todo.append(getattr(p, "inner", None))
        todo.extend(getattr(p, "providers", ()) or ())
    return tuple(found)


def with_cassette(provider: Provider, own: Any = None) -> Provider:
    """``provider`` behind the agent's cassette, else the one of the block the run is in."""
    tape = own if own is not None else CURRENT.get()
    if tape is None or isinstance(provider, CassetteProvider):
        return provider
    if getattr(provider, "primed", False):  # a fork's edited reply is no model's: only what follows records
        provider.inner = with_cassette(provider.inner, tape)  # type: ignore[attr-defined]
        return provider
    return CassetteProvider(provider, tape)


def open_cassette(value: Any) -> Cassette | None:
    """``Agent(cassette=...)``: a path (mode ``once``), a :class:`Cassette`, or None."""
    if value is None or isinstance(value, Cassette):
        return value
    if isinstance(value, (str, os.PathLike)):
        return Cassette(value)
    raise UserError(f"cassette= takes a file path or agentnb.cassette(...)'s Cassette, not {type(value).__name__}")


__all__ = ["CURRENT", "Cassette", "CassetteError", "CassetteMiss", "CassetteProvider", "cassette", "with_cassette"]
