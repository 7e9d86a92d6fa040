"""What the ``%agent`` options name in the notebook: the provider (a Provider variable, or a spec
built once and reused), the tools (``--tools a,b``, or every ``@tool`` in the namespace) and the
MCP servers (``--mcp``: a variable, a URL or a command line, started once and reused).

Mistakes are :class:`~agentnb.errors.UserError` lines that name what the notebook has instead.
"""

from __future__ import annotations

from typing import Any

from agentnb.errors import UserError
from agentnb.notebook.magics.options import MagicOptions
from agentnb.providers import SPEC_KINDS, Provider, get_provider
from agentnb.providers.spec import SERVERS, check_tool_calling
from agentnb.tools import Tool, tool

__all__ = ["DEFAULT_PROVIDER", "NamespaceLookup"]

DEFAULT_PROVIDER = "local"


class NamespaceLookup:
    """A mixin of :class:`~agentnb.notebook.magics.agent.AgentMagics`: the providers, tools and MCP
    servers its options name (it uses the magics' ``shell``, and keeps what it built in
    ``_providers`` and ``_mcp_servers``)."""

    shell: Any
    _providers: dict[tuple[str, str | None, str | None], Provider]
    _mcp_servers: dict[str, Any]

    def _provider(self, opts: MagicOptions) -> Provider:
        """A Provider variable named by ``--provider``, or one built (once) from a spec string."""
        name = opts.provider or DEFAULT_PROVIDER
        value = self.shell.user_ns.get(name) if name.isidentifier() else None
        if isinstance(value, Provider):
            if opts.model or opts.base_url or opts.tool_calling:
                also = " (so does --tool-calling)" if opts.tool_calling else ""
                raise UserError(
                    f"--model/--base-url need a provider spec such as 'openai:MODEL'{also}, not the object {name!r}"
                )
            return value
        spec = value if isinstance(value, str) else name
        if opts.model:
            spec = f"{spec.partition(':')[0]}:{opts.model}"
        key = (spec, opts.base_url, opts.tool_calling)
        if key in self._providers:
            return self._providers[key]
        options: dict[str, Any] = {"base_url": opts.base_url} if opts.base_url else {}
        if opts.tool_calling:
            check_tool_calling(spec)
            options["tool_calling"] = opts.tool_calling
        try:
            provider = get_provider(spec, **options)
        except UserError:
            if value is None and name.isidentifier() and name.lower() not in (*SPEC_KINDS, *SERVERS):
                raise UserError(
                    f"unknown provider {name!r}: no Provider variable of that name in the notebook, and not a spec "
                    "such as 'openai:MODEL' or 'local'"
                ) from None
            raise
        except ImportError as exc:
            raise UserError(f"provider {spec!r} is not available: {exc}") from None
        except TypeError as exc:
            raise UserError(f"provider {spec!r} does not take these options: {exc}") from None
        self._providers[key] = provider
        return provider

    def _tools(self, names: tuple[str, ...] | None) -> list[Tool]:
        ns = self.shell.user_ns
        found = {k: v for k, v in ns.items() if isinstance(v, Tool) and not k.startswith("_")}
        if names is None:
            unique: dict[int, Tool] = {id(t): t for t in found.values()}
            return list(unique.values())
        tools = []
        for name in names:
            if name not in ns:
                known = ", ".join(found) or "none"
                raise UserError(
                    f"unknown tool {name!r}: no variable of that name in the notebook (tools found: {known})"
                )
            value = ns[name]
            if not isinstance(value, Tool) and not callable(value):
                raise UserError(f"{name!r} is a {type(value).__name__}, not a tool; decorate a function with @tool")
            tools.append(tool(value))
        return tools

    def _kernel(self, mode: str | None) -> list[Tool]:
        """``--kernel MODE``: the tools of ``kernel_tools(MODE)`` over the notebook's namespace
        (``code`` and ``sandbox`` need approval: the trace widget asks)."""
        if mode is None:
            return []
        from agentnb.kernel import kernel_tools

        return kernel_tools(mode, namespace=self.shell.user_ns)  # type: ignore[arg-type]

    def _mcp(self, specs: tuple[str, ...]) -> list[Any]:
        """MCP servers from ``--mcp``: a variable, a URL or a command line (started once, then reused)."""
        if not specs:
            return []
        from agentnb.mcp import MCPError, MCPServer

        servers = []
        for spec in specs:
            value = self.shell.user_ns.get(spec) if spec.isidentifier() else None
            if isinstance(value, MCPServer):
                servers.append(value)
                continue
            if spec not in self._mcp_servers:
                is_url = spec.startswith(("http://", "https://"))
                self._mcp_servers[spec] = MCPServer.http(spec) if is_url else MCPServer.stdio(spec)
            servers.append(self._mcp_servers[spec])
        for server in servers:
            try:
                server.start()
            except MCPError as exc:
                raise UserError(str(exc).splitlines()[0]) from None
        return servers
