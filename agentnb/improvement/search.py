"""The search: reflective mutation with Pareto selection over ``evaluate``, inside a budget.

One step (GEPA's reflective mutation): pick a parent from the Pareto front (:mod:`.pareto`),
the next of its components (round robin) and the next training minibatch; run the parent on the
minibatch; show its failures to the reflector; run the child on the same minibatch; only if it
passes more of them, score it on the whole validation set and add it to the pool.

The budget counts case runs (one case by one candidate), each distinct one once, those read
back from the log included. A step starts only when the budget left covers all it may spend
(the minibatch twice and the validation set), and the test comparison's runs are set aside
before the first run, so the budget holds. All runs go through :func:`agentnb.aevaluate`:
its concurrency, its isolation of a failing case, its log (resume) and its Stop.

A Stop (the widget's button, Ctrl-C) ends the phase under way: the runs in flight and a
reflection are cancelled, every finished run is kept, and the search says where it stopped. A
new candidate whose runs were cut short is recorded as ``stopped`` (never selected: its
validation scores are incomplete); a cancelled reflection is not logged, so a resume asks again.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from agentnb.evaluation.cases import Case
from agentnb.evaluation.log import EvalLog, read_log
from agentnb.evaluation.results import Evaluation
from agentnb.evaluation.run import Stopper, aevaluate
from agentnb.improvement import pareto
from agentnb.improvement.events import CandidateDone, ImproveFinished, PhaseStarted, RunsSpent
from agentnb.improvement.reflect import case_record, propose, reflector_prompt
from agentnb.improvement.texts import build_agent, candidate_id, read_texts

#: Steps in a row that spend no run (nothing to learn, nothing usable proposed) before the search ends.
MAX_IDLE = 5
#: The log key prefix of a reflector's proposal (a case run's key is ``case|candidate|repeat``).
PROPOSAL = "improve-proposal"


class Halted(Exception):  # noqa: N818 - a control-flow signal, not an error
    """A Stop cut a phase short; the message says what of it finished."""


def as_dataset(cases: list[Case]) -> list[dict[str, Any]]:
    """Cases back as rows that keep their ids (evaluate names log lines by them)."""
    return [{**c.metadata, "id": c.id, "input": c.input, "expected": c.expected} for c in cases]


class Search:
    """The state of one improvement: candidates, their rows, the budget spent, the reflections."""

    def __init__(
        self,
        agent: Any,
        names: list[str],
        splits: tuple[list[Case], list[Case], list[Case]],
        scorers: list[Any],
        reflector: Any,
        *,
        budget: int,
        minibatch: int,
        seed: int,
        log: str | None,
        stopper: Stopper,
        emit: Callable[[Any], None],
        reflector_limits: Any,
        eval_options: dict[str, Any],
    ) -> None:
        self.agent = agent
        self.names = names
        self.train, self.val, self.test = splits
        self.scorers = scorers
        self.thresholds = {s.name: s.threshold for s in scorers}
        self.reflector = reflector
        self.budget = budget
        self.reserve = 2 * len(self.test)  # the test comparison: the original and the best
        self.rng = random.Random(seed)
        self.batches = pareto.Batches([c.id for c in self.train], minibatch, self.rng)
        self.log = log
        self.stopper = stopper
        self.emit = emit
        self.reflector_limits = reflector_limits
        self.eval_options = eval_options
        self.cases = {c.id: c for c in [*self.train, *self.val, *self.test]}
        self.texts: dict[str, dict[str, str]] = {}
        self.parents: dict[str, str | None] = {}
        self.agents: dict[str, Any] = {}
        self.pool: dict[str, dict[str, float]] = {}  # validation scores of the seed and accepted ones
        self.rows: dict[tuple[str, str], tuple[dict[str, Any], Any, int]] = {}
        self.records: list[dict[str, Any]] = []
        self.reflections: list[dict[str, Any]] = []
        self.turn: dict[str, int] = {}
        self.spent = 0
        self.reason = ""
        self.halted = False  # the reason is a Stop's
        self.test_eval: Any = None
        self.reflector_usage: Any = None
        self.logged = self._logged_proposals()
        self.seed_id = self._add(read_texts(agent, names), None)

    # -- candidates and runs ---------------------------------------------------------------

    def _add(self, texts: dict[str, str], parent: str | None) -> str:
        cid = candidate_id(texts)
        if cid not in self.texts:
            self.texts[cid], self.parents[cid] = texts, parent
            self.agents[cid] = self.agent if parent is None else build_agent(self.agent, texts)
        return cid

    def left(self) -> int:
        return self.budget - self.reserve - self.spent

    def missing(self, cid: str, ids: list[str]) -> int:
        return sum(1 for i in ids if (cid, i) not in self.rows)

    async def runs(self, cid: str, ids: list[str]) -> list[dict[str, Any]]:
        """The rows of candidate ``cid`` on these cases, running those not run yet."""
        todo = [self.cases[i] for i in ids if (cid, i) not in self.rows]
        if todo and not self.stopper.stopped.is_set():
            await self._evaluate({cid: self.agents[cid]}, todo)
        return [self.rows[(cid, i)][0] for i in ids if (cid, i) in self.rows]

    async def _evaluate(self, agents: dict[str, Any], cases: list[Case], stopper: Stopper | None = None) -> Any:
        stopper = stopper or self.stopper
        feed = _Feed(self)
        options = dict(self.eval_options)
        options["concurrency"] = max(1, min(options["concurrency"], len(cases) * len(agents)))  # no idle workers
        ev = await aevaluate(
            agents, as_dataset(cases), self.scorers, log=self.log, progress=[feed], stopper=stopper, **options
        )
        if ev.stopped:  # a Ctrl-C cancelled the runs: a Stop of the whole improvement, as the button's
            stopper.stopped.set()
        order = sorted(range(len(ev.rows)), key=lambda k: (ev.rows[k]["index"], ev.agents.index(ev.rows[k]["agent"])))
        for pos, k in enumerate(order):
            row = ev.rows[k]
            self.rows[(row["agent"], row["case"])] = (row, ev, pos)
        return ev

    def result_of(self, cid: str, case_id: str) -> Any:
        """The whole RunResult of one case run (from memory, or from the log)."""
        _, ev, pos = self.rows[(cid, case_id)]
        return ev.run(pos)

    async def _phase(self, phase: Any, cid: str, ids: list[str], step: int = 0) -> list[dict[str, Any]]:
        """Candidate ``cid``'s rows on ``ids`` (a phase the views are told of); :class:`Halted`
        when a Stop left some of them unrun."""
        self.emit(PhaseStarted(phase, step, cid))
        rows = await self.runs(cid, ids)
        if len(rows) < len(ids):
            raise Halted(f"{len(rows)} of {len(ids)} runs finished")
        return rows

    # -- the search ------------------------------------------------------------------------

    async def run(self) -> None:
        """Score the original, then step until the budget, the idle limit, a perfect candidate or a Stop."""
        try:
            rows = await self._phase("original", self.seed_id, [c.id for c in self.val])
        except Halted as why:
            self.reason = f"stopped before the original was scored: {why} on the validation set"
            self.halted = True
            return
        self.pool[self.seed_id] = _scores(rows)
        self._record(self.seed_id, "seed", runs=len(rows), val=self.pool[self.seed_id])
        idle, step = 0, 0
        while not self.reason:
            step += 1
            before = self.spent
            try:
                why_idle = await self.step(step)
            except Halted as why:
                self.reason, self.halted = f"stopped during step {step} ({why}): {self._kept()}", True
                break
            if self.stopper.stopped.is_set():
                self.reason, self.halted = f"stopped after step {step}: {self._kept()}", True
            elif why_idle and self.spent == before:
                idle += 1
                if idle >= MAX_IDLE:
                    self.reason = f"{MAX_IDLE} steps in a row spent no run ({why_idle})"
            else:
                idle = 0

    def _kept(self) -> str:
        best = self.best()
        return "the original is kept" if best == self.seed_id else f"the best so far, candidate {best}, is kept"

    def _name(self, cid: str) -> str:
        return f"the original ({cid})" if cid == self.seed_id else f"candidate {cid}"

    async def step(self, n: int) -> str | None:
        """One reflective mutation; returns why it learned nothing, when it did not. :class:`Halted`
        when a Stop cut it short (a new candidate whose runs it cut is recorded as ``stopped``)."""
        parent = pareto.pick(self.pool, self.rng)
        component = self._next_component(parent)
        batch = self.batches.next()
        need = self.missing(parent, batch) + len(batch) + len(self.val)
        if need > self.left():
            self.reason = f"budget: {self.left()} runs left, a step may need {need}"
            return None
        try:
            prows = await self._phase("parent", parent, batch, n)
        except Halted as cut:
            raise Halted(f"{self._name(parent)} on the minibatch: {cut}") from None
        failing = [r for r in prows if not r["passed"]]
        if not failing:
            if all(self.rows.get((parent, c.id), ({"passed": False},))[0]["passed"] for c in self.train):
                self.reason = f"candidate {parent} passes every training case: no failure left to learn from"
            return "the parents pass their training minibatches"
        text, why = await self._reflect(n, parent, component, failing)
        rec: dict[str, Any] = {"parent": parent, "component": component, "minibatch": batch, "step": n}
        if text is None:
            self._record(None, "skipped", reason=why, **rec)
            return why
        child = self._add({**self.texts[parent], component: text}, parent)
        if child in self.pool or any(r["id"] == child for r in self.records):
            self._record(None, "skipped", reason=f"the text is that of candidate {child}", **rec)
            return "the reflector proposed a text already tried"
        await self._try(n, child, prows, rec)
        return None

    async def _try(self, n: int, child: str, prows: list[dict[str, Any]], rec: dict[str, Any]) -> None:
        """The new candidate on the parent's minibatch; if it passes more, on the validation set."""
        where = "minibatch"
        try:
            crows = await self._phase("candidate", child, rec["minibatch"], n)
            before, after = sum(_scores(prows).values()), sum(_scores(crows).values())
            rec.update(parent_minibatch=before, child_minibatch=after)
            if after <= before:
                self._record(child, "rejected", runs=len(crows), reason="passes no more of the minibatch", **rec)
                return None
            where = "validation set"
            vrows = await self._phase("validation", child, [c.id for c in self.val], n)
        except Halted as why:
            runs = sum(1 for cid, _ in self.rows if cid == child)
            self._record(child, "stopped", runs=runs, reason=f"stopped on the {where}: {why}", **rec)
            raise Halted(f"new candidate {child} on the {where}: {why}") from None
        self.pool[child] = _scores(vrows)
        self._record(child, "accepted", runs=len(crows) + len(vrows), val=self.pool[child], **rec)
        return None

    def _next_component(self, cid: str) -> str:
        k = self.turn.get(cid, 0)
        self.turn[cid] = k + 1
        return self.names[k % len(self.names)]

    async def _reflect(self, n: int, parent: str, component: str, failing: list[dict[str, Any]]) -> tuple[Any, Any]:
        current = self.texts[parent][component]
        logged = self.logged.get((n, parent, component))
        if logged is not None:  # resumed: the reflector already answered this step
            self.reflections.append({**logged, "resumed": True})
            return logged.get("text"), logged.get("reason")
        records = [
            case_record(i, r, self.result_of(parent, r["case"]), self.thresholds) for i, r in enumerate(failing, 1)
        ]
        prompt = reflector_prompt(component, current, records)
        self.emit(PhaseStarted("reflection", n, parent))
        # In a task of its own, which a Stop cancels: the reflector may take minutes.
        got = await self.stopper.guard(propose(self.reflector, prompt, self.reflector_limits, current))
        if got is not None:
            usage = got[2].usage  # spent, even by a reflection cancelled half-way
            self.reflector_usage = usage if self.reflector_usage is None else self.reflector_usage + usage
        if got is None or (self.stopper.stopped.is_set() and got[2].stop_reason == "cancelled"):
            raise Halted(f"the reflection on the failures of {self._name(parent)} was cancelled")  # not logged
        text, why, result = got
        entry = {
            "key": f"{PROPOSAL}|{n}|{parent}|{component}",
            "improve": "proposal",
            "step": n,
            "parent": parent,
            "component": component,
            "cases": [r["case"] for r in failing],
            "prompt": prompt,
            "reply": result.output,
            "text": text,
            "reason": why,
        }
        self.reflections.append(entry)
        if self.log is not None:
            with EvalLog(self.log) as out:
                out.append(entry, result.to_dict(redact=False))
        return text, why

    def _logged_proposals(self) -> dict[tuple[int, str, str], dict[str, Any]]:
        if self.log is None:
            return {}
        found = {}
        for row, _ in read_log(self.log):
            if row.get("improve") == "proposal":
                found[(row["step"], row["parent"], row["component"])] = row
        return found

    def _record(self, cid: str | None, status: str, *, runs: int = 0, val: Any = None, **more: Any) -> None:
        texts = self.texts.get(cid) if cid is not None else None
        component = more.pop("component", None)
        rec = {
            "id": cid,
            "parent": more.pop("parent", self.parents.get(cid) if cid else None),
            "status": status,
            "component": component,
            "text": texts.get(component or self.names[0]) if texts else None,
            "texts": dict(texts) if texts else None,
            "val_scores": dict(val) if val is not None else None,
            "val_mean": pareto.mean(val) if val is not None else None,
            "runs": runs,
            **more,
        }
        self.records.append(rec)
        best = pareto.best(self.pool)
        self.emit(CandidateDone(rec, best, pareto.mean(self.pool[best])))

    def finish(self) -> None:
        """Tell the views the improvement ended, and why."""
        self.emit(ImproveFinished(self.reason, self.spent))

    def best(self) -> str:
        return pareto.best(self.pool) if self.pool else self.seed_id

    # -- the test comparison ---------------------------------------------------------------

    def test_agents(self) -> dict[str, Any]:
        """The original and the best (the original alone when it is the best)."""
        return {cid: self.agents[cid] for cid in dict.fromkeys((self.seed_id, self.best()))}

    def test_done(self) -> dict[str, int]:
        """Test cases finished per candidate of the comparison."""
        return {cid: sum(1 for c in self.test if (cid, c.id) in self.rows) for cid in self.test_agents()}

    def test_progress(self) -> str:
        """What of the test comparison finished, in words."""
        done, n = self.test_done(), len(self.test)
        names = {self.seed_id: "the original", self.best(): "the best"}
        return ", ".join(f"{names[cid]} finished {k} of {n} test cases" for cid, k in done.items())

    async def test_phase(self) -> None:
        """The test comparison, unless a Stop came first; a Stop says so in ``reason``."""
        if not self.test:
            return
        if not self.stopper.stopped.is_set():
            self.emit(PhaseStarted("test"))
            await self.run_test()
        if not self.halted and min(self.test_done().values()) < len(self.test):
            when = "during" if self.test_eval is not None else "before"
            self.reason = (
                f"stopped {when} the test comparison ({self.test_progress()}); the search had ended: {self.reason}"
            )
            self.halted = True

    async def run_test(self, stopper: Stopper | None = None) -> Any:
        """Original and best on the test cases, paired (the best alone when it is the original).
        Called again after a Stop, it runs only what the Stop left undone."""
        if not self.test:
            return None
        agents = self.test_agents()
        if self.test_eval is None:
            self.test_eval = await self._evaluate(agents, self.test, stopper)
            return self.test_eval
        for cid, agent in agents.items():
            todo = [c for c in self.test if (cid, c.id) not in self.rows]
            if todo:
                await self._evaluate({cid: agent}, todo, stopper)
        merged = Evaluation(list(agents), [s.name for s in self.scorers], log=self.log,
                            output_types=self.test_eval.output_types)  # fmt: skip
        for index, case in enumerate(self.test):
            for cid in agents:
                if (cid, case.id) in self.rows:
                    row, ev, _ = self.rows[(cid, case.id)]
                    merged.adopt({**row, "index": index}, ev)  # its place in the test set, not in a rerun's
        merged.stopped = min(self.test_done().values()) < len(self.test)
        self.test_eval = merged
        return merged


class _Feed:
    """An evaluate view that counts the runs into the budget and reports them."""

    def __init__(self, search: Search) -> None:
        self.search = search

    def start(self, ev: Any, total: int, stopper: Any) -> None:
        if ev.rows:  # read back from the log: spent by the earlier, killed improvement
            self.search.spent += len(ev.rows)
            self.search.emit(RunsSpent(self.search.spent, self.search.budget))

    def row(self, row: dict[str, Any]) -> None:
        self.search.spent += 1
        self.search.emit(RunsSpent(self.search.spent, self.search.budget))

    def finish(self, ev: Any) -> None:
        pass


def _scores(rows: list[dict[str, Any]]) -> dict[str, float]:
    return {r["case"]: 1.0 if r["passed"] else 0.0 for r in rows}
