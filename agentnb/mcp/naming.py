"""A stdio MCP server's name, from its command line: the package or command it runs.

``npx -y @modelcontextprotocol/server-everything stdio`` runs the package
``@modelcontextprotocol/server-everything``: its name is ``server-everything``, not ``stdio``
(a trailing argument) and not ``npx`` (the runner). Runners (npx, uvx, pipx, bunx, node, deno,
bun, python, ``python -m``, ``uv run``, docker, ``java -jar``, ``mcp run``, a shell and its
``-c`` command, and a runner run by one of them) are skipped with their flags; a package loses
its scope and version (but a generic name, ``@playwright/mcp``, is named after its scope); a
module after its last telling part (``billing.server``: ``billing``); a script after its file (or
its folder, for a generic ``index.js`` / ``main.py`` / ``server.py``); arguments after the
package or script (``stdio``, a directory to serve) never name the server.

>>> server_name(["npx", "-y", "@modelcontextprotocol/server-everything", "stdio"])
'server-everything'
>>> server_name(["npx", "-y", "@modelcontextprotocol/server-filesystem", "/home/me/notes"])
'server-filesystem'
>>> server_name(["uvx", "mcp-server-fetch==2025.1.1"]), server_name(["python", "-m", "mcp_server_git", "--repo", "."])
('mcp-server-fetch', 'mcp_server_git')
>>> server_name(["/usr/bin/python3", "servers/weather.py"]), server_name(["node", "build/github/index.js"])
('weather', 'github')
>>> server_name(["sh", "-c", "exec python -u srv/weather.py"]), server_name(["C:\\\\Py\\\\python.exe", "srv.py"])
('weather', 'srv')
>>> server_name(["npx", "@playwright/mcp@latest"]), server_name(["uv", "run", "--with", "mcp", "mcp", "run", "tools.py"])
('playwright', 'tools')
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence

#: Commands that run another program, named by what follows them.
_RUNNERS = {
    "npx",
    "pnpx",
    "bunx",
    "uvx",
    "pipx",
    "node",
    "deno",
    "bun",
    "npm",
    "pnpm",
    "yarn",
    "uv",
    "docker",
    "podman",
    "java",
    "mcp",  # the MCP SDK's own runner: mcp run server.py
}
#: Words after a runner that are part of the runner's own command (``uv run``, ``npm exec``).
_VERBS = {"run", "exec", "dlx", "x", "tool", "dev"}
#: Flags that take a value, so the value is not the package.
_VALUED = {
    "-p",
    "--package",
    "--with",
    "--python",
    "-e",
    "--env",
    "--env-file",
    "-v",
    "--volume",
    "--name",
    "--network",
    "-w",
    "--workdir",
    "--mount",
    "--platform",
    "--registry",
    "--index-url",
    "-c",
    "--call",
    "--node-options",
    "--config",
    "--from",
}
_SHELLS = {"sh", "bash", "zsh", "dash", "cmd"}
_GENERIC = {"index", "main", "server", "app", "cli", "__main__", "run", "start", "dist", "build", "src", "lib", "mcp"}
_SCRIPT = re.compile(r"\.(?:[cm]?js|ts|py|mjs|sh|jar)$")


def server_name(argv: Sequence[str]) -> str:
    """The name of the server ``argv`` starts (see the module docstring); ``"mcp"`` if none."""
    args = [a for a in argv if a]
    if not args:
        return "mcp"
    first = _stem(args[0])
    if first in _SHELLS and len(args) >= 3 and args[1] in ("-c", "/c", "-lc"):
        try:  # sh -c "exec env A=1 python server.py --port 1"; cmd /c npx -y @scope/server
            words = shlex.split(args[2]) if len(args) == 3 else args[2:]
        except ValueError:  # an unclosed quote
            words = args[2].split()
        while words and (words[0] in ("exec", "env") or re.match(r"\w+=", words[0])):
            words = words[1:]
        return server_name(words)
    if first.startswith("python") or first in _RUNNERS or first in _SHELLS:
        rest = args[1:]
        module = _after(rest, "-m")
        if module is not None:  # the last part that says something: pkg.server -> pkg
            named = [p for p in module.split(".") if p and p.lower() not in _GENERIC]
            return named[-1] if named else module
        target = _first_operand(rest)
        if target is not None and _stem(target) in _RUNNERS:
            return server_name(rest[rest.index(target) :])  # uv run --with mcp mcp run server.py
        if target is not None:
            return _script_or_package(target)
    return first or "mcp"


def _after(args: list[str], flag: str) -> str | None:
    for i, a in enumerate(args[:-1]):
        if a == flag:
            return args[i + 1]
        if not a.startswith("-"):
            return None
    return None


def _first_operand(args: list[str]) -> str | None:
    """The first argument that is neither a flag, a flag's value, nor a runner's verb."""
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        if a.startswith("-"):
            skip = a in _VALUED  # "--flag=value" carries its own value
            continue
        if a in _VERBS:
            continue
        return a
    return None


def _script_or_package(target: str) -> str:
    if _SCRIPT.search(target) or target.startswith(("/", ".", "~")) or os.path.exists(target):
        stem = _stem(target)
        if stem.lower() in _GENERIC:  # name it after the folder that holds it
            parts = [p for p in re.split(r"[\\/]", target)[:-1] if p and p not in (".", "..")]
            named = [p for p in parts if p.lower() not in _GENERIC]
            return named[-1] if named else stem
        return stem
    bare = re.sub(r"^(?:npm|jsr|pypi|docker):", "", target)
    scope, _, name = bare.rpartition("/")  # "@scope/name@1.0" -> "name@1.0"; "image/name:tag" -> "name:tag"
    name = re.split(r"@|==|>=|<=|~=|:", name, maxsplit=1)[0] or target
    owner = scope.rsplit("/", 1)[-1].lstrip("@")
    return owner if name.lower() in _GENERIC and owner else name  # @playwright/mcp -> playwright


def _stem(path: str) -> str:
    base = re.split(r"[\\/]", path.rstrip("/\\"))[-1]  # a Windows path too (C:\\Python\\python.exe)
    return _SCRIPT.sub("", base) if _SCRIPT.search(base) else os.path.splitext(base)[0] if "." in base[1:] else base
