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
_SHAPES = re.compile(
    r"\b(?:sk|pk|rk)-[A-Za-z0-9_\-]{16,}"  # OpenAI / Anthropic / Stripe-style keys
    r"|\b(?:Bearer|Basic)\s+[A-Za-z0-9._\-~+/]{16,}=*"
    r"|\bgh[pousr]_[A-Za-z0-9]{20,}"  # GitHub tokens
    r"|\bgithub_pat_[A-Za-z0-9_]{20,}"
    r"|\bhf_[A-Za-z0-9]{20,}"  # Hugging Face tokens
    r"|\bAKIA[0-9A-Z]{16}\b"  # AWS access key ids
    r"|\bAIza[0-9A-Za-z_\-]{30,}"  # Google API keys
    r"|\bxox[abposr]-[A-Za-z0-9\-]{10,}"  # Slack tokens
)
_URL_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]+@")
_URL_KEYS = re.compile(r"([?&](?:api[_-]?key|key|token|access_token|sig|signature)=)[^&\s#\"']+", re.IGNORECASE)
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


def _redact(text: str, values: tuple[str, ...]) -> str:
    for value in values:
        if value in text:
            text = text.replace(value, HIDDEN)
    if "://" in text:
        text = _URL_CREDENTIALS.sub(r"\1***@", text)
    if "=" in text:
        text = _URL_KEYS.sub(r"\1***", text)
    return _SHAPES.sub(HIDDEN, text)


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
            found |= {v for k, v in os.environ.items() if _SECRET_NAME.search(k)}
        if providers:
            found.update(held())
        self.values = _longest_first(found)

    def redact(self, text: str) -> str:
        """``text`` with every secret replaced by ``***``."""
        return _redact(text, self.values)

    def scrub(self, value: Any) -> Any:
        """``value`` (JSON-like data) with every string redacted, dict keys included."""
        return scrub(value, self.redact)


def scrub(value: Any, redact: Callable[[str], str]) -> Any:
    """``value`` with ``redact`` applied to every string in it, dict keys included (two keys
    redacted alike are both kept, numbered); tuples become lists.

    >>> scrub({"sk-aaaaaaaaaaaaaaaaaaaa": 1, "sk-bbbbbbbbbbbbbbbbbbbb": (2, "x")}, Redactor().redact)
    {'***': 1, '***#2': [2, 'x']}
    """
    if isinstance(value, str):
        return redact(value) if value else value
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for k, v in value.items():
            key = redact(k) if isinstance(k, str) and k else k
            if key in out:
                n = 2
                while f"{key}#{n}" in out:
                    n += 1
                key = f"{key}#{n}"
            out[key] = scrub(v, redact)
        return out
    if isinstance(value, (list, tuple)):
        return [scrub(v, redact) for v in value]
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return scrub(_plain(value), redact)


def _plain(obj: Any) -> Any:
    """JSON data for what is not: a pydantic model, a dataclass, bytes; else its text."""
    if hasattr(obj, "model_dump"):
        return obj.model_dump(mode="json")
    if hasattr(obj, "__dataclass_fields__") and not isinstance(obj, type):
        import dataclasses

        return dataclasses.asdict(obj)
    return str(obj)
