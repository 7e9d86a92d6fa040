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
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from agentnb.evaluation.cases import Case
from agentnb.evaluation.log import EvalLog, read_log
from agentnb.evaluation.run import Stopper, aevaluate
from agentnb.improvement import pareto
from agentnb.improvement.events import CandidateDone, ImproveFinished, RunsSpent
from agentnb.improvement.reflect import case_record, propose, reflector_prompt
from agentnb.improvement.texts import build_agent, candidate_id, read_texts

#: Steps in a row that spend no run (nothing to learn, nothing usable proposed) before the search ends.
MAX_IDLE = 5
#: The log key prefix of a reflector's proposal (a case run's key is ``case|candidate|repeat``).
PROPOSAL = "improve-proposal"


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
        if todo:
            await self._evaluate({cid: self.agents[cid]}, todo)
        return [self.rows[(cid, i)][0] for i in ids if (cid, i) in self.rows]

    async def _evaluate(self, agents: dict[str, Any], cases: list[Case]) -> Any:
        feed = _Feed(self)
        options = dict(self.eval_options)
        options["concurrency"] = max(1, min(options["concurrency"], len(cases) * len(agents)))  # no idle workers
        ev = await aevaluate(
            agents, as_dataset(cases), self.scorers, log=self.log, progress=[feed], stopper=self.stopper, **options
        )
        order = sorted(range(len(ev.rows)), key=lambda k: (ev.rows[k]["index"], ev.agents.index(ev.rows[k]["agent"])))
        for pos, k in enumerate(order):
            row = ev.rows[k]
            self.rows[(row["agent"], row["case"])] = (row, ev, pos)
        return ev

    def result_of(self, cid: str, case_id: str) -> Any:
        """The whole RunResult of one case run (from memory, or from the log)."""
        _, ev, pos = self.rows[(cid, case_id)]
        return ev.run(pos)

    # -- the search ------------------------------------------------------------------------

    async def run(self) -> None:
        val = [c.id for c in self.val]
        rows = await self.runs(self.seed_id, val)
        if self.stopper.stopped.is_set() or len(rows) < len(val):
            self.reason = "stopped before the original was scored"
            return self._finish()
        self.pool[self.seed_id] = _scores(rows)
        self._record(self.seed_id, "seed", runs=len(rows), val=self.pool[self.seed_id])
        idle, step = 0, 0
        while not self.reason:
            step += 1
            before = self.spent
            why_idle = await self.step(step)
            if self.stopper.stopped.is_set():
                self.reason = "stopped: the best candidate so far is kept"
            elif why_idle and self.spent == before:
                idle += 1
                if idle >= MAX_IDLE:
                    self.reason = f"{MAX_IDLE} steps in a row spent no run ({why_idle})"
            else:
                idle = 0
        self._finish()

    async def step(self, n: int) -> str | None:
        """One reflective mutation; returns why it learned nothing, when it did not."""
        parent = pareto.pick(self.pool, self.rng)
        component = self._next_component(parent)
        batch = self.batches.next()
        need = self.missing(parent, batch) + len(batch) + len(self.val)
        if need > self.left():
            self.reason = f"budget: {self.left()} runs left, a step may need {need}"
            return None
        prows = await self.runs(parent, batch)
        if self.stopper.stopped.is_set():
            return None
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
        crows = await self.runs(child, batch)
        if self.stopper.stopped.is_set():
            return None
        before, after = sum(_scores(prows).values()), sum(_scores(crows).values())
        rec.update(parent_minibatch=before, child_minibatch=after)
        if after <= before:
            self._record(child, "rejected", runs=len(batch), reason="passes no more of the minibatch", **rec)
            return None
        vrows = await self.runs(child, [c.id for c in self.val])
        if self.stopper.stopped.is_set() or len(vrows) < len(self.val):
            return None
        self.pool[child] = _scores(vrows)
        self._record(child, "accepted", runs=len(batch) + len(vrows), val=self.pool[child], **rec)
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
        text, why, result = await propose(self.reflector, prompt, self.reflector_limits, current)
        usage = result.usage
        self.reflector_usage = usage if self.reflector_usage is None else self.reflector_usage + usage
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

    def _finish(self) -> None:
        self.emit(ImproveFinished(self.reason, self.spent))

    def best(self) -> str:
        return pareto.best(self.pool) if self.pool else self.seed_id

    async def run_test(self) -> Any:
        """Original and best on the test cases, paired (the best alone when it is the original)."""
        if not self.test:
            return None
        best = self.best()
        agents = {self.seed_id: self.agents[self.seed_id]}
        if best != self.seed_id:
            agents[best] = self.agents[best]
        self.test_eval = await self._evaluate(agents, self.test)
        return self.test_eval


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
