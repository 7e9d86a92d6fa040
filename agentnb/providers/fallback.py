"""``FallbackProvider``: the same step goes to the next provider when one fails.

``FallbackProvider([primary, backup, ...])``, or a list as the provider
(``Agent(["openai:gpt-4o-mini", "anthropic:claude-3-5-haiku-latest"])``; items are providers or
spec strings). A step that fails on one provider with a connection error, a timeout, a rate
limit past its retries, a 5xx or an unknown model (``404``) is asked of the next; other
failures (a rejected key, a refused request) are raised as they are. Every reply carries a
:class:`~agentnb.events.ProviderAnswered` event: which provider answered, and which failed or
were skipped before it.

A circuit breaker per provider: after ``failures`` failures in a row a provider is skipped for
``cooldown`` seconds, then tried with one request; success closes the circuit, failure opens it
again. So a provider that is down costs at most one request per step once its circuit is open
(none while it cools down).

A streamed step falls back only while nothing has been shown of it; once the first chunk
arrived, a failure ends the step as usual.

>>> from agentnb import Agent
>>> from agentnb.errors import ServerError
>>> from agentnb.testing import ScriptedProvider
>>> down = ScriptedProvider([ServerError("down", status=503)], name="primary")
>>> up = ScriptedProvider(["hello from the backup"], name="backup")
>>> result = Agent(FallbackProvider([down, up])).run("hi")
>>> result.output, [e.provider for e in result.events if e.kind == "provider_answered"]
('hello from the backup', ['backup'])
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from agentnb.control.cost import priced
from agentnb.errors import AuthenticationError, ProviderError, UserError
from agentnb.events import ProviderAnswered
from agentnb.providers.base import Chunk, Completion, Provider, Request
from agentnb.providers.spec import build_one


class Breaker:
    """One provider's circuit: closed (used), open (skipped), half-open (one trial request).

    >>> b = Breaker(failures=2, cooldown=10.0)
    >>> b.failed(0.0); b.allows(1.0)
    True
    >>> b.failed(1.0); b.allows(2.0), b.allows(11.5)
    (False, True)
    """

    __slots__ = ("failures", "cooldown", "count", "opened")

    def __init__(self, failures: int, cooldown: float) -> None:
        self.failures = failures
        self.cooldown = cooldown
        self.count = 0  # failures in a row
        self.opened: float | None = None  # when the circuit opened (None: closed)

    def allows(self, now: float) -> bool:
        """Whether to send this provider a request now (open: only once the cooldown is over)."""
        return self.opened is None or now - self.opened >= self.cooldown

    def failed(self, now: float) -> None:
        self.count += 1
        if self.count >= self.failures:
            self.opened = now  # (again, for a half-open trial that failed)

    def succeeded(self) -> None:
        self.count = 0
        self.opened = None

    @property
    def state(self) -> str:
        return "closed" if self.opened is None else "open"


def falls_back(exc: BaseException) -> bool:
    """Whether a failure sends the step to the next provider: connection errors and timeouts,
    rate limits (past the retries), 5xx, unknown models; not a rejected key or a refused request."""
    if not isinstance(exc, ProviderError) or isinstance(exc, AuthenticationError):
        return False
    status = exc.status
    return status is None or status in (404, 408, 429) or status >= 500


class FallbackProvider(Provider):
    """Providers in order of preference; a failing one hands the step to the next.

    Args:
        providers: providers or spec strings, the preferred first.
        failures: failures in a row that open a provider's circuit.
        cooldown: seconds an open circuit skips its provider before one trial request.
        clock: a monotonic clock (injectable for tests).
    """

    supports_native_tools = True

    def __init__(
        self,
        providers: Sequence[Provider | str],
        *,
        failures: int = 2,
        cooldown: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if isinstance(providers, (str, Provider)) or len(providers) < 1:
            raise UserError("FallbackProvider takes a list of providers (or specs), the preferred first")
        if not isinstance(failures, int) or failures < 1:
            raise UserError(f"failures must be a whole number >= 1, not {failures!r}")
        built = []
        for p in providers:
            provider = build_one(p)
            if not provider.supports_native_tools:  # text-only: tools simulated in the prompt
                from agentnb.providers.untooled import UnTooled

                provider = UnTooled(provider)
            built.append(provider)
        self.providers: list[Provider] = built
        self.breakers = [Breaker(failures, cooldown) for _ in built]
        self.clock = clock
        self.name = " → ".join(p.name for p in built)
        self.supports_streaming = any(p.supports_streaming for p in built)

    def __repr__(self) -> str:
        return f"FallbackProvider([{', '.join(repr(p) for p in self.providers)}])"

    async def complete(self, request: Request) -> Completion:
        passed: list[tuple[str, str]] = []
        notes: list[Any] = []  # events of the step's failed attempts (their retries)
        last: BaseException | None = None
        for index, provider in self._candidates(passed):
            try:
                completion = await provider.complete(request)
            except Exception as exc:
                if not falls_back(exc):
                    raise
                self._failed(index, exc, passed, notes)
                last = exc
                continue
            return self._answered(index, completion, passed, notes)
        raise self._exhausted(last, passed, notes)

    async def stream(self, request: Request) -> AsyncIterator[Chunk | Completion]:
        passed: list[tuple[str, str]] = []
        notes: list[Any] = []  # events of the step's failed attempts (their retries)
        last: BaseException | None = None
        for index, provider in self._candidates(passed):
            items = provider.stream(request)
            shown = False
            try:
                async for item in items:
                    if isinstance(item, Completion):
                        yield self._answered(index, item, passed, notes)
                        return
                    shown = True
                    yield item
            except Exception as exc:
                if shown or not falls_back(exc):
                    raise
                self._failed(index, exc, passed, notes)
                last = exc
                continue
            finally:
                await items.aclose()  # type: ignore[attr-defined]
        raise self._exhausted(last, passed, notes)

    # --- helpers -----------------------------------------------------------------------------

    def _candidates(self, passed: list[tuple[str, str]]) -> Any:
        now = self.clock()
        allowed = [self.breakers[i].allows(now) for i in range(len(self.providers))]
        if not any(allowed):  # every circuit open: one trial, of the one that opened first
            first = min(range(len(self.providers)), key=lambda i: self.breakers[i].opened or 0.0)
            allowed[first] = True
        for index, provider in enumerate(self.providers):
            if allowed[index]:
                yield index, provider
            else:
                passed.append((provider.name, "skipped: its circuit is open after repeated failures"))

    def _failed(self, index: int, exc: BaseException, passed: list[tuple[str, str]], notes: list[Any]) -> None:
        self.breakers[index].failed(self.clock())
        notes.extend(getattr(exc, "events", ()))  # the retries it took before failing
        passed.append((self.providers[index].name, str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__))

    def _answered(
        self, index: int, completion: Completion, passed: list[tuple[str, str]], notes: list[Any]
    ) -> Completion:
        import dataclasses

        self.breakers[index].succeeded()
        provider = self.providers[index]
        event = ProviderAnswered(0, provider.name, index, tuple(passed))
        usage = priced(provider, completion.usage)  # priced as the provider that answered
        return dataclasses.replace(completion, usage=usage, events=(*notes, event, *completion.events))

    def _exhausted(self, last: BaseException | None, passed: list[tuple[str, str]], notes: list[Any]) -> ProviderError:
        detail = "; ".join(f"{name}: {why}" for name, why in passed)
        error = ProviderError(f"every provider failed ({detail})", status=getattr(last, "status", None))
        error.events = tuple(notes)
        return error
