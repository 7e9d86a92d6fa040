"""Running a tool safely: daemon threads, error text that cannot fail, bounded results.

* :func:`call_in_thread` runs a sync tool on a daemon thread. Unlike ``asyncio.to_thread``
  (whose executor is joined when the interpreter exits) a timed-out or cancelled tool that
  never returns does not keep the process alive.
* :func:`exception_text` describes any exception, even one whose ``__str__`` raises.
* :func:`clip` shortens a long result for the model, saying how much was cut.

>>> class Weird(Exception):
...     def __str__(self):
...         raise RuntimeError("no")
>>> exception_text(Weird())
'Weird: <unprintable Weird>'
>>> print(clip("x" * 50, 20))
xxxxxxxxxxxxxxx
[... 30 characters cut: the result had 50 characters ...]
xxxxx
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import threading
from collections.abc import Callable
from typing import Any

#: Bound on the characters of one tool result the model reads when the model's window is unknown
#: (Agent/tool option ``max_result_chars``); the full result stays in the events, the transcript
#: and the widget.
DEFAULT_MAX_RESULT_CHARS = 20_000
#: The Agent's default ``max_result_chars``: a share of the model's window
#: (:data:`agentnb.context.gauge.RESULT_SHARE`, a quarter), else :data:`DEFAULT_MAX_RESULT_CHARS`.
AUTO_RESULT_CHARS = "auto"

#: Set for runs whose cancellation comes from another thread (the notebook's Stop button,
#: Ctrl-C on a kernel): their sync tools run on threads, so the event loop stays free to
#: deliver the cancellation while a tool works.
SYNC_TOOLS_IN_THREAD: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "agentnb_sync_tools_in_thread", default=False
)


async def call_in_thread(fn: Callable[..., Any], kwargs: dict[str, Any], name: str = "tool") -> Any:
    """``fn(**kwargs)`` on a new daemon thread; awaiting it can be cancelled or timed out."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()

    def deliver(ok: bool, value: Any) -> None:
        if future.done():  # cancelled or timed out meanwhile: nobody wants the value
            return
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)

    def work() -> None:
        try:
            value, ok = context.run(fn, **kwargs), True
        except BaseException as exc:  # handed to the awaiting coroutine, SystemExit included
            value, ok = (exc if isinstance(exc, Exception) else Escaped(exc)), False
        try:
            loop.call_soon_threadsafe(deliver, ok, value)
        except RuntimeError:  # the run's loop is closed: the run ended without this result
            pass

    threading.Thread(target=work, name=f"agentnb-tool-{name}", daemon=True).start()
    return await future


class Escaped(Exception):  # noqa: N818 - a carrier, not an error of its own
    """Carries a ``BaseException`` (SystemExit, KeyboardInterrupt) out of a tool thread.

    Re-raised as it is, a SystemExit inside an asyncio task (``wait_for`` makes one) would
    stop the event loop; the caller unwraps it where it can handle it.
    """

    def __init__(self, inner: BaseException) -> None:
        super().__init__(exception_text(inner))
        self.inner = inner


def exception_text(exc: BaseException) -> str:
    """``"TypeName: message"`` for any exception; never raises."""
    name = type(exc).__name__
    try:
        text = str(exc)
    except Exception:
        text = f"<unprintable {name}>"
    return f"{name}: {text}" if text else name


def safe_repr(value: Any) -> str:
    """``repr(value)``, or a placeholder when that raises."""
    try:
        return repr(value)
    except Exception:
        return f"<unprintable {type(value).__name__}>"


def clip(text: str, limit: int | None) -> str:
    """``text`` cut to about ``limit`` characters (its start and its end), with a note."""
    if limit is None or len(text) <= limit:
        return text
    head = limit * 3 // 4
    tail = limit - head
    cut = len(text) - head - tail
    note = f"[... {cut} characters cut: the result had {len(text)} characters ...]"
    return f"{text[:head]}\n{note}\n{text[len(text) - tail :] if tail else ''}"


def unknown_message(call: Any, names: tuple[str, ...]) -> str:
    """What the model reads when it called a tool that does not exist."""
    available = ", ".join(names) or "(none)"
    if call.parse_error and not call.name:  # a text model's call attempt that could not be read
        return f"Your tool call could not be read: {call.parse_error}. Available functions: {available}."
    return f'Function "{call.name}" not found. Available functions: {available}. Call one of these, or answer in text.'


def invalid_message(tool: Any, errors: list[str] | tuple[str, ...]) -> str:
    """What the model reads when its arguments do not match the tool's schema."""
    lines = "\n".join(f"- {e}" for e in errors)
    return (
        f"Invalid arguments for {tool.name}; it was not run:\n{lines}\n"
        f"Its parameters schema is {_compact(tool.parameters)}. Fix the arguments and call it again."
    )


def _compact(schema: dict[str, Any]) -> str:
    return json.dumps(schema, separators=(",", ":"))
