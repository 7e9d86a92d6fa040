"""An MCP server as a source of agentnb tools, on the official ``mcp`` SDK.

The server is started once (its process, or its HTTP session), its tools are listed with
``tools/list`` and become ordinary :class:`~agentnb.tools.Tool` objects, and each call goes
through ``tools/call``. The session lives on agentnb's MCP thread
(:mod:`agentnb.mcp.runtime`), so it survives across runs, cells and event loops; it ends on
:meth:`MCPServer.close`, at the end of a ``with`` / ``async with`` block, or at interpreter
exit. How a session reaches its server (a process, or HTTP) is :mod:`agentnb.mcp.transports`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from agentnb.errors import AgentnbError, MissingDependencyError, UserError
from agentnb.mcp import runtime as rt
from agentnb.mcp.convert import MCPToolError, build_tool, result_text, tool_name
from agentnb.mcp.follow import follow, list_all, message_handler, unreadable
from agentnb.mcp.transports import http_transport, stdio_transport
from agentnb.tools import Tool, ToolContext

#: Seconds a ``tools/call`` may take before it is abandoned and reported to the model.
DEFAULT_CALL_TIMEOUT = 60.0
#: Seconds a server may take to start and list its tools.
DEFAULT_STARTUP_TIMEOUT = 30.0


class MCPError(AgentnbError):
    """An MCP server could not be started or listed (the message says why, with its stderr)."""


class MCPServer:
    """Tools from a Model Context Protocol server.

    Build one with :meth:`stdio` (a local command) or :meth:`http` (streamable HTTP) and pass
    it in an agent's tools; its tools join the others, validated by the same loop::

        server = MCPServer.stdio("python", "server.py")
        agent = Agent("openai:gpt-4o-mini", tools=[server, my_tool])

    Nothing starts until the tools are first needed. Two servers with clashing tool names:
    ``tools=[a, *b.tools(prefix="b_")]``.

    >>> s = MCPServer.stdio("python", "server.py", name="files")
    >>> s
    MCPServer.stdio('files')
    >>> s.started
    False
    """

    def __init__(
        self,
        transport: Any,
        *,
        name: str,
        label: str,
        timeout: float = DEFAULT_CALL_TIMEOUT,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        include: Iterable[str] | None = None,
        prefix: str = "",
    ) -> None:
        self._transport = transport  # a callable: () -> an SDK transport (async context manager)
        self.name = name
        self._label = label
        self.timeout = timeout
        self.startup_timeout = startup_timeout
        self.include = tuple(include) if include is not None else None
        self.prefix = prefix
        self._lock = threading.Lock()
        self._client: Any = None
        self._task: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._listing: list[Any] = []
        self._broken = False
        self._errlog: Any = None
        #: The command line of a stdio server (None for HTTP).
        self.command: list[str] | None = None
        #: Counts the server's ``tools/list_changed`` notifications: an agent that sees it move
        #: lists the tools again before its next model call (see :mod:`agentnb.mcp.follow`).
        self.tools_version = 0
        self._stale = False
        self._mode = "auto"  # the SDK client's protocol negotiation ("legacy": before 2026-07-28)

    # -- construction -----------------------------------------------------------------------

    @classmethod
    def stdio(
        cls,
        command: str,
        *args: str,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        name: str | None = None,
        **options: Any,
    ) -> MCPServer:
        """A server run as a local process that speaks MCP over its stdin/stdout.

        ``command`` alone may be a whole command line (``"python server.py"``); ``python``
        means the interpreter running agentnb. ``env`` adds to the SDK's minimal default
        environment (``PATH``, ``HOME``, ...). The server's stderr is kept and quoted in errors.
        Options: ``name`` (shown in traces and errors; default: the package or script the
        command runs, e.g. ``server-everything`` for ``npx -y
        @modelcontextprotocol/server-everything stdio``), ``timeout`` (per call, seconds),
        ``startup_timeout``, ``include`` and ``prefix`` (see :meth:`tools`).
        """
        _sdk()
        argv, label, transport = stdio_transport(command, args, env=env, cwd=cwd, name=name)
        server = cls(transport, name=label, label=f"stdio({label!r})", **options)
        server.command = argv
        return server

    @classmethod
    def http(
        cls, url: str, headers: Mapping[str, str] | None = None, *, name: str | None = None, **options: Any
    ) -> MCPServer:
        """A server reached over streamable HTTP at ``url`` (e.g. ``http://127.0.0.1:8000/mcp``).

        ``headers`` (an ``Authorization`` header, say) go with every request and never appear
        in reprs or errors.
        """
        _sdk()
        label, safe_url, transport = http_transport(url, headers, name=name)
        return cls(transport, name=label, label=f"http({safe_url!r})", **options)

    def __repr__(self) -> str:
        kind = "stdio" if self.command is not None else "http"
        return f"MCPServer.{kind}({self.name!r})" if kind == "stdio" else f"MCPServer.{self._label}"

    # -- lifetime ---------------------------------------------------------------------------

    @property
    def started(self) -> bool:
        """True while the session is open and usable."""
        return self._task is not None and not self._task.done() and self._client is not None and not self._broken

    def start(self) -> MCPServer:
        """Start the server and list its tools (done for you on first use); returns ``self``."""
        runtime = rt.runtime()
        if runtime.on_own_thread():
            raise RuntimeError("MCPServer.start() cannot run on the MCP thread itself")
        with self._lock:
            if self.started:
                return self
            if self._task is not None:  # a dead or broken session: clear it away first
                self._shutdown_sync(5.0)
            future = runtime.submit(self._open())
            try:
                future.result(self.startup_timeout)
            except concurrent.futures.TimeoutError:
                future.cancel()
                why = f"did not start within {self.startup_timeout:g} s"
            except MCPError as exc:  # said by agentnb (what the server wrote)
                why = f"failed to start: {exc}"
            except Exception as exc:
                why = f"failed to start: {_describe(exc)}"
            else:
                rt.register(self)
                return self
            self._shutdown_sync(5.0)  # the process has ended: its stderr is complete now
            raise MCPError(f"{self._label} {why}{self._stderr()}") from None

    def close(self, timeout: float = 10.0) -> None:
        """End the session (the server process exits); a later use starts it again."""
        with self._lock:
            self._shutdown_sync(timeout)
            if self._errlog is not None:
                self._errlog.close()
                self._errlog = None

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    def __enter__(self) -> MCPServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> MCPServer:
        return await asyncio.to_thread(self.start)

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _shutdown_sync(self, timeout: float) -> None:
        rt.unregister(self)
        if self._task is None:
            return
        future = rt.runtime().submit(self._shutdown(timeout))
        try:
            future.result(timeout + 10)
        except Exception:  # the task was cancelled or failed: it is over either way
            pass
        self._task = None

    async def _open(self) -> None:
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()
        self._broken = False
        self._stop = asyncio.Event()
        self._task = loop.create_task(self._serve(ready, self._stop))
        try:
            await ready
        except asyncio.CancelledError:
            self._task.cancel()
            raise

    async def _serve(self, ready: asyncio.Future[None], stop: asyncio.Event) -> None:
        from mcp import Client

        listener: asyncio.Task[None] | None = None

        def broken(exc: Exception) -> None:  # before it is up, a server that writes junk fails at once
            if not ready.done():
                ready.set_exception(MCPError(unreadable(exc)))

        handler = message_handler(self._tools_changed, broken)
        try:
            async with Client(self._transport(self), cache=None, message_handler=handler, mode=self._mode) as client:
                self._stale = False
                self._client, self._listing = client, await list_all(client)
                listener = follow(client, self._tools_changed)
                ready.set_result(None)
                await stop.wait()
                _cancelled(listener)
                listener = None
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError(repr(exc)))
            if not isinstance(exc, Exception):
                raise
        finally:
            _cancelled(listener)
            self._client = None

    async def _shutdown(self, timeout: float) -> None:
        task, stop = self._task, self._stop
        if task is None or task.done():
            return
        if stop is not None:
            stop.set()
        done, _ = await asyncio.wait({task}, timeout=timeout)
        if not done:  # a server that will not stop: cancel; the SDK still kills its process
            task.cancel()
            await asyncio.wait({task}, timeout=5.0)

    # -- tools ------------------------------------------------------------------------------

    def _tools_changed(self) -> None:
        """The server said its tools changed (on the MCP thread): list them on the next use."""
        self._stale = True
        self.tools_version += 1

    def _relist(self) -> None:
        if not (self._stale and self.started):
            return
        self._stale = False  # before listing: a change announced meanwhile lists again
        client = self._client
        try:
            self._listing = rt.runtime().submit(list_all(client)).result(self.startup_timeout)
        except Exception:  # keep the old listing; calls to vanished tools fail as tool errors
            self._stale = True

    def tools(self, include: Iterable[str] | None = None, prefix: str | None = None) -> list[Tool]:
        """The server's tools as agentnb tools (starts the server if needed).

        After the server announced a change (``notifications/tools/list_changed``) they are
        listed again first.

        Args:
            include: only these tools (by the server's names); default: the server's
                ``include`` option, else all.
            prefix: put before every name (``"fs_"``), so two servers cannot clash; default:
                the server's ``prefix`` option.
        """
        try:
            self.start()
        except MCPError:
            if not self._listing:
                raise
            # A server that went away after listing its tools (an open listen stream notices
            # at once): its tools stay; a call reports it, and starts it again.
        self._relist()
        wanted = tuple(include) if include is not None else self.include
        prefix = self.prefix if prefix is None else prefix
        names = [t.name for t in self._listing]
        if wanted is not None:
            missing = sorted(set(wanted) - set(names))
            if missing:
                raise UserError(f"{self!r} has no tool {', '.join(missing)}; it has: {', '.join(names) or '(none)'}")
        return [
            build_tool(spec, tool_name(spec.name, prefix), self.name, self.call)
            for spec in self._listing
            if wanted is None or spec.name in wanted
        ]

    async def call(self, name: str, arguments: dict[str, Any], ctx: ToolContext | None = None) -> str:
        """Call one tool by its server name; the result text (images go to ``ctx``).

        Raises :class:`MCPToolError` (which the loop hands to the model) when the server
        reports an error, does not answer within ``timeout``, or goes away.
        """
        if not self.started:
            try:
                await asyncio.to_thread(self.start)
            except MCPError as exc:
                raise MCPToolError(
                    f"the MCP server {self.name} is not running and did not start again: {exc}"
                ) from None
        runtime = rt.runtime()
        future = runtime.submit(self._call(name, arguments))
        try:
            # The server's own timeout fires first; this one guards against a stuck session.
            result = await asyncio.wait_for(asyncio.wrap_future(future), self.timeout + 5)
        except asyncio.TimeoutError:
            raise MCPToolError(f"the MCP server {self.name} did not answer within {self.timeout:g} s") from None
        return result_text(result, ctx)

    async def _call(self, name: str, arguments: dict[str, Any]) -> Any:
        from mcp import MCPError as SDKError
        from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT
        from pydantic import ValidationError

        client = self._client
        if client is None:
            self._broken = True
            raise MCPToolError(f"the MCP server {self.name} is not running")
        try:
            return await client.call_tool(name, arguments, read_timeout_seconds=self.timeout)
        except SDKError as exc:
            if exc.code == REQUEST_TIMEOUT:
                raise MCPToolError(f"the MCP server {self.name} did not answer within {self.timeout:g} s") from None
            if exc.code == CONNECTION_CLOSED:
                self._broken = True  # the next use starts it again
                raise MCPToolError(
                    f"the MCP server {self.name} closed the connection during the call{self._stderr()}"
                ) from None
            raise MCPToolError(f"the MCP server {self.name} answered with an error: {exc.message}") from None
        except ValidationError as exc:
            raise MCPToolError(
                f"the MCP server {self.name} sent a malformed result: {exc.error_count()} problems"
            ) from None

    def _stderr(self, limit: int = 800) -> str:
        log = self._errlog
        if log is None or log.closed:
            return ""
        try:
            log.flush()
            log.seek(0)
            text = log.read()[-limit:].strip()
        except (OSError, ValueError):
            return ""
        return f"\nserver stderr (last lines):\n{text}" if text else ""


def _cancelled(task: asyncio.Task[None] | None) -> None:
    if task is not None:
        task.cancel()


def _describe(exc: BaseException) -> str:
    while getattr(exc, "exceptions", None):  # anyio task groups wrap errors in groups
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    return f"{type(exc).__name__}: {exc}"


def _sdk() -> None:
    try:
        import mcp  # noqa: F401
    except ImportError:
        raise MissingDependencyError("MCPServer", "mcp") from None
