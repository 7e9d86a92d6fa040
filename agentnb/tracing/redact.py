"""Secrets out of everything agentnb writes: known secrets and key-shaped strings become ``***``.

A provider keeps every secret it holds in one wrapper, :class:`Secret`: its API key, the value
of each default header and query parameter, and the credentials written into its base URL. Each
wrapper is known (weakly) to :func:`held`, so a writer needs no provider in hand: a cassette, a
transcript (:meth:`agentnb.RunResult.save`), an evaluation log and span content are redacted of
every secret a live provider holds. :class:`Redactor` adds the values of secret-looking
environment variables (``*_API_KEY``, ``*_TOKEN``, ``*SECRET*``, ``*PASSWORD*``), credentials in
any URL, and strings shaped like keys (``sk-...``, ``Bearer ...``, ``ghp_...``); its
:meth:`~Redactor.scrub` applies to every string of a JSON value, keys included.

>>> Redactor(["hunter2-long-secret"]).redact("pw hunter2-long-secret and sk-abcdefghijklmnop1234")
'pw *** and ***'
>>> Redactor().scrub({"sk-abcdefghijklmnop1234": ["see http://me:pw@host/v1"]})
{'***': ['see http://***@host/v1']}
"""

from __future__ import annotations

import base64
import os
import re
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

_SECRET_NAME = re.compile(r"(API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.IGNORECASE)
#: Key shapes, each behind the literal its matches contain: ``in`` tells in a few nanoseconds
#: a character that no shape is there, where one pattern of them all took ~100.
_SHAPES: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...] = (
    (("sk-", "pk-", "rk-"), re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_\-]{16,}")),  # OpenAI / Anthropic / Stripe
    (("Bearer", "Basic"), re.compile(r"\b(?:Bearer|Basic)\s+[A-Za-z0-9._\-~+/]{16,}=*")),
    (("gh",), re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}")),  # GitHub tokens
    (("hf_",), re.compile(r"\bhf_[A-Za-z0-9]{20,}")),  # Hugging Face tokens
    (("AKIA",), re.compile(r"\bAKIA[0-9A-Z]{16}\b")),  # AWS access key ids
    (("AIza",), re.compile(r"\bAIza[0-9A-Za-z_\-]{30,}")),  # Google API keys
    (("xox",), re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}")),  # Slack tokens
)
_URL_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]+@")
_URL_KEYS = re.compile(r"(?i)([?&](?:api[_-]?key|key|token|access_token|sig|signature)=)[^&\s#\"']+")
_SHORTEST = 6  # no shorter text holds a secret: values have _MIN characters, ``a://b@`` six
_MIN = 8  # shorter values are no secret worth hiding, and replacing them garbles text
HIDDEN = "***"


class Secret:
    """The secrets one provider holds; no repr, ``vars()`` dump or log line shows them.

    ``value`` is the API key (what the client is given); ``values`` is every secret string:
    the key, each header and query value (and the token after ``Bearer``), the base URL's
    userinfo and its password (as written and decoded).

    >>> s = Secret("sk-0123456789", base_url="http://me:pa55word@h/v1", headers={"X-Token": "Bearer team-42-token"})
    >>> s
    <secret>
    >>> s.redact("sk-0123456789 / team-42-token / pa55word / http://me:pa55word@h/v1")
    '*** / *** / *** / http://***@h/v1'
    """

    __slots__ = ("__weakref__", "value", "values")

    def __init__(
        self,
        value: str,
        *,
        base_url: str | None = None,
        headers: Mapping[str, Any] | None = None,
        query: Mapping[str, Any] | None = None,
        more: Iterable[str] = (),
    ) -> None:
        self.value = value
        found = {value, *more, *url_secrets(base_url)}
        for mapping in (headers, query):
            for item in (mapping or {}).values():
                found.update(_value_secrets(item))
        self.values = _longest_first(found)
        _hold(self)

    def __repr__(self) -> str:
        return "<secret>"

    def __getstate__(self) -> tuple[str, tuple[str, ...]]:
        return self.value, self.values

    def __setstate__(self, state: tuple[str, tuple[str, ...]]) -> None:
        # A copy (sent to a worker process) is known there too, so what the worker writes is redacted.
        self.value, self.values = state
        _hold(self)

    def redact(self, text: str) -> str:
        """``text`` without these secrets, credentials in any URL, or a key-shaped string."""
        return _redact(text, self.values)


_HELD: weakref.WeakSet[Secret] = weakref.WeakSet()
_LOCK = threading.Lock()


def _hold(secret: Secret) -> None:
    with _LOCK:
        _HELD.add(secret)


def held() -> tuple[str, ...]:
    """Every secret that a live :class:`Secret` (a provider's) holds."""
    with _LOCK:
        wrappers = list(_HELD)
    return tuple({v for w in wrappers for v in w.values})


def url_secrets(url: str | None) -> list[str]:
    """The credentials in ``url``: its whole userinfo (as written, decoded, and in base64 as a
    ``Basic`` authorization header carries it), its password, and its query's values.

    >>> url_secrets("https://ann:p%40ss-word@host/v1?api_key=k-0123456789")
    ['ann:p%40ss-word', 'ann:p@ss-word', 'YW5uOnBAc3Mtd29yZA==', 'YW5uOnBAc3Mtd29yZA', 'p%40ss-word', 'p@ss-word', 'k-0123456789']
    """
    if not url or not isinstance(url, str):
        return []
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    found: list[str] = []
    if "@" in parts.netloc:
        userinfo = parts.netloc.rsplit("@", 1)[0]
        password = userinfo.partition(":")[2]
        basic = base64.b64encode(unquote(userinfo).encode()).decode()
        found += [userinfo, unquote(userinfo), basic, basic.rstrip("=")]
        if password:
            found += [password, unquote(password)]
    found += [v for _, v in parse_qsl(parts.query)]
    return found


def _value_secrets(item: Any) -> list[str]:
    """A header's or a query parameter's value, and the token after a scheme (``Bearer x``)."""
    if isinstance(item, bytes):
        item = item.decode("latin-1")
    if not isinstance(item, str):
        return []
    token = item.strip().partition(" ")[2]
    return [item, item.strip(), token.strip()] if token else [item, item.strip()]


def _longest_first(found: Iterable[Any]) -> tuple[str, ...]:
    # Longest first, so a secret containing another is replaced whole.
    return tuple(sorted({s for s in found if isinstance(s, str) and len(s) >= _MIN}, key=len, reverse=True))


#: Short texts seen to hold no key shape nor URL secret: a transcript's field names and kinds,
#: tool names; with them known, most of a file's strings cost one set lookup.
_PLAIN: set[str] = set()
_PLAIN_MAX, _PLAIN_LEN = 4096, 48


def _redact(text: str, values: tuple[str, ...]) -> str:
    if len(text) < _SHORTEST:
        return text
    for value in values:
        if value in text:
            text = text.replace(value, HIDDEN)
    if text in _PLAIN:
        return text
    given = text
    if "://" in text and "@" in text:
        text = _URL_CREDENTIALS.sub(r"\1***@", text)
    if "=" in text:
        text = _URL_KEYS.sub(r"\1***", text)
    for literals, shape in _SHAPES:
        for literal in literals:
            if literal in text:
                text = shape.sub(HIDDEN, text)
                break
    if text is given and len(text) <= _PLAIN_LEN and len(_PLAIN) < _PLAIN_MAX:
        _PLAIN.add(text)
    return text


class Redactor:
    """Replaces secrets in text with ``***`` (see the module docstring).

    Args:
        secrets: more strings to hide.
        environ: also the values of secret-looking environment variables.
        providers: also every secret a live provider holds (:func:`held`).
    """

    def __init__(self, secrets: Iterable[str] = (), *, environ: bool = True, providers: bool = True) -> None:
        found = set(secrets)
        if environ:
            found.update(_environ_secrets())
        if providers:
            found.update(held())
        self.values = _longest_first(found)

    def redact(self, text: str) -> str:
        """``text`` with every secret replaced by ``***``."""
        return _redact(text, self.values)

    def scrub(self, value: Any) -> Any:
        """``value`` (JSON-like data) with every string redacted, dict keys included."""
        return scrub(value, self.redact)


_ENVIRON: tuple[Any, frozenset[str]] = (None, frozenset())  # the environment last read, and its secrets


def _environ_secrets() -> frozenset[str]:
    """The values of secret-looking environment variables, read again when the environment changed.

    A Redactor is made for each file written; reading the environment through ``os.environ``
    (decoding every entry, a pattern per name) was most of its cost, and it rarely changes.
    """
    global _ENVIRON
    raw = getattr(os.environ, "_data", None)  # CPython's own copy, as bytes (or str on Windows)
    snapshot = tuple(raw.items()) if isinstance(raw, dict) else None
    last, found = _ENVIRON
    if snapshot is None or snapshot != last:
        found = frozenset(v for k, v in os.environ.items() if _SECRET_NAME.search(k))
        _ENVIRON = (snapshot, found)
    return found


def scrub(value: Any, redact: Callable[[str], str]) -> Any:
    """``value`` with ``redact`` applied to every string in it, dict keys included (two keys
    redacted alike are both kept, numbered); tuples become lists.

    >>> scrub({"sk-aaaaaaaaaaaaaaaaaaaa": 1, "sk-bbbbbbbbbbbbbbbbbbbb": (2, "x")}, Redactor().redact)
    {'***': 1, '***#2': [2, 'x']}
    """
    seen: dict[str, str] = {}  # a transcript repeats its keys and kinds: each is redacted once

    def text(t: str) -> str:
        found = seen.get(t)
        if found is None:
            found = seen[t] = redact(t)
        return found

    def walk(v: Any) -> Any:
        kind = type(v)
        if kind is dict:
            out: dict[Any, Any] = {}
            for k, item in v.items():  # the strings inline: most of a transcript is short strings
                key = seen.get(k) if type(k) is str else k
                if key is None:
                    key = seen[k] = redact(k)
                if key in out:
                    key = _unique(key, out)
                t = type(item)
                if t is str:
                    found = seen.get(item)
                    out[key] = found if found is not None else text(item)
                else:
                    out[key] = item if t in _LEAVES else walk(item)
            return out
        if kind is str:
            return text(v)
        if kind is list or kind is tuple:
            return [item if type(item) in _LEAVES else walk(item) for item in v]
        if kind in _LEAVES:
            return v
        if isinstance(v, str):
            return text(str(v))
        if isinstance(v, (dict, list, tuple)):
            return walk(dict(v) if isinstance(v, dict) else list(v))
        return v if isinstance(v, (int, float)) else walk(_plain(v))

    return walk(value)


_LEAVES = frozenset({int, float, bool, type(None)})


def _unique(key: Any, taken: dict[Any, Any]) -> str:
    n = 2
    while f"{key}#{n}" in taken:
        n += 1
    return f"{key}#{n}"


def _plain(obj: Any) -> Any:
    """JSON data for what is not: a pydantic model, a dataclass, bytes; else its text."""
    if hasattr(obj, "model_dump"):
        return obj.model_dump(mode="json")
    if hasattr(obj, "__dataclass_fields__") and not isinstance(obj, type):
        import dataclasses

        return dataclasses.asdict(obj)
    return str(obj)
