"""Every public name documents itself with a runnable example (issue 13).

The examples run under ``tests/test_public_api.py::test_docstring_examples_run``; this test
checks that each name in ``agentnb.__all__`` has one in its own docstring.
"""

from __future__ import annotations

import inspect

import pytest

import agentnb


@pytest.mark.parametrize("name", agentnb.__all__)
def test_each_public_name_has_an_example(name: str) -> None:
    obj = getattr(agentnb, name)
    if inspect.isclass(obj) or inspect.isfunction(obj):
        doc = obj.__doc__ or ""
        assert ">>>" in doc, f"{name} has no example in its docstring"
        assert not doc.startswith(f"{name}("), f"{name} has only the generated dataclass docstring"
    else:  # a constant: documented, with an example, in the module that defines it
        module = next(m for m in ("agentnb.run.agent", "agentnb") if hasattr(__import__(m, fromlist=["_"]), name))
        text = inspect.getsource(__import__(module, fromlist=["_"]))
        assert "#: " in text and ">>> " in text and name in text.split(">>>", 1)[1], name
