"""The sandbox's side: loaded into the sandbox kernel (``runpy.run_path``), never imported here.

:func:`install` puts one hidden object, ``__agentnb__``, into the sandbox's namespace; the host
calls its methods through ``user_expressions`` (:mod:`agentnb.kernel.sandbox.process`):

* ``after()``: the names created or changed since the last look (a map of name to ``id``), and
  the text of the cell's value (a DataFrame or array as agentnb's rich-result path shows it);
* ``load(path)`` / ``dump(name, path)``: the copies of shared variables in, a pulled value out;
* each cell's CPU time is bounded: a ``pre_run_cell`` hook sets ``RLIMIT_CPU``'s soft limit to
  the CPU used so far plus the limit (past it, the kernel receives SIGXCPU and dies).

Only the standard library (and cloudpickle, pandas/numpy rendering when present) is used.
"""

import json
import os
import pickle
import resource
import types

#: Characters of a value's text sent back (the host cuts further).
MAX_VALUE = 20_000


def _pickler():  # cloudpickle when present: it copies functions and classes defined in a cell
    try:
        import cloudpickle

        return cloudpickle
    except ImportError:
        return pickle


class Inside:
    """The helper behind ``__agentnb__`` in the sandbox's namespace."""

    def __init__(self, ip, cpu_seconds):
        self.ip = ip
        self.cpu_seconds = cpu_seconds
        self.seen = {}
        if cpu_seconds:
            ip.events.register("pre_run_cell", self._limit_cpu)
        self.after()

    def _limit_cpu(self, *_):
        used = resource.getrusage(resource.RUSAGE_SELF)
        soft = int(used.ru_utime + used.ru_stime) + 1 + int(self.cpu_seconds)
        _, hard = resource.getrlimit(resource.RLIMIT_CPU)
        resource.setrlimit(resource.RLIMIT_CPU, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard))

    def names(self):
        hidden = self.ip.user_ns_hidden
        return {
            k: id(v)
            for k, v in list(self.ip.user_ns.items())
            if not k.startswith("_") and k not in hidden and not isinstance(v, types.ModuleType)
        }

    def after(self, value=False):
        """JSON: the names created or changed since the last look; with ``value``, the text of
        the value of the cell that just ran (None: its ``text/plain`` says it)."""
        now = self.names()
        changed = [k for k, i in now.items() if self.seen.get(k) != i]
        self.seen = now
        out = {"changed": changed}
        outputs = self.ip.user_ns.get("Out", {})
        count = self.ip.execution_count - 1
        if value and count in outputs:
            out["value"] = self._text(outputs[count])
        return json.dumps(out)

    def _text(self, value):
        if type(value).__module__.split(".")[0] not in ("pandas", "numpy"):
            return None  # the kernel's text/plain says it
        try:
            from agentnb.tools.rendering import render_value

            return render_value(value)[:MAX_VALUE]
        except Exception:
            return None

    def load(self, path):
        """Put the copies in ``path`` into the namespace: a pickled list of (name, size), then
        each copy's pickle of that size. Returns {name: why} for the copies that did not load."""
        failed = {}
        try:
            with open(path, "rb") as f:
                for name, size in pickle.load(f):
                    blob = f.read(size)
                    try:
                        self.ip.user_ns[name] = pickle.loads(blob)
                    except Exception as exc:
                        failed[name] = f"{type(exc).__name__}: {exc}"[:300]
        finally:
            os.unlink(path)
        self.after()
        return json.dumps(failed)

    def dump(self, name, path):
        """Write a copy of ``name`` to ``path``; an error's text, or None."""
        if name not in self.ip.user_ns or name.startswith("_"):
            return json.dumps(f"the sandbox has no variable {name!r}")
        try:
            data = _pickler().dumps(self.ip.user_ns[name], protocol=5)
        except Exception as exc:
            return json.dumps(f"{name} cannot be copied out of the sandbox: {type(exc).__name__}: {exc}"[:500])
        with open(path, "wb") as f:
            f.write(data)
        return json.dumps(None)


def install(ip, cpu_seconds):
    """Put the helper into ``ip``'s namespace as ``__agentnb__``, hidden from listings."""
    helper = Inside(ip, cpu_seconds)
    ip.user_ns["__agentnb__"] = helper
    ip.user_ns_hidden["__agentnb__"] = helper
    return helper
