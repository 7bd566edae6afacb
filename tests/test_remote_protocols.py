"""What a test does with an object of the student's behaves as the real object does
(issue 35, C.1): ``next()`` on a generator, a ``for`` loop over one, ``sum`` of one, the
order comparisons between the student's objects, truth by the class's own ``__bool__``,
a ``with`` block. The instructor's tests run in the verifier against references into the
student's kernel (``grader.sandbox.pyremote.Remote``); each test here also runs in plain
Python against the same code, the real semantics, and must pass there too. An object of
the notebook's own class never orders itself against the instructor's data (as with
``==``: its class could say yes to every bound).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from nbformat.v4 import new_code_cell, new_notebook

from grader.sandbox.clean_names import clean_names
from grader.sandbox.execution import (
    ExecLimits,
    InstructorTest,
    execute_notebook,
    kernel_available,
    sandbox_available,
)

pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    not sandbox_available() or not kernel_available("python"),
    reason="bubblewrap or the Python kernel is missing")]

STUDENT = '''
def countdown(n):
    while n > 0:
        yield n
        n -= 1

class Money:
    def __init__(self, cents):
        self.cents = cents
    def _c(self, other):
        return other.cents if isinstance(other, Money) else other
    def __lt__(self, other):
        return self.cents < self._c(other)
    def __le__(self, other):
        return self.cents <= self._c(other)
    def __gt__(self, other):
        return self.cents > self._c(other)
    def __ge__(self, other):
        return self.cents >= self._c(other)
    def __bool__(self):
        return self.cents != 0

class Opened:
    def __init__(self):
        self.log = []
    def __enter__(self):
        self.log.append("in")
        return self
    def __exit__(self, *exc):
        self.log.append("out")
        return False
'''
TESTS = {
    "next": "g = countdown(3)\nassert next(g) == 3\nassert next(g) == 2\n"
            "assert list(g) == [1]\nassert next(g, None) is None",
    "for": "assert [x for x in countdown(3)] == [3, 2, 1]\nassert sum(countdown(4)) == 10\n"
           "seen = []\nfor x in countdown(2):\n    seen.append(x)\nassert seen == [2, 1]",
    "compare": "assert Money(5) < Money(10)\nassert Money(3) <= Money(5)\n"
               "assert Money(5) >= Money(5)\nassert not (Money(5) > Money(7))\n"
               "assert sorted([Money(9), Money(2)], key=lambda m: m.cents)[0].cents == 2",
    "truth": "assert not Money(0)\nassert Money(1)\nassert bool(countdown(1))",
    "with": "o = Opened()\nwith o as same:\n    assert same.log == ['in']\n"
            "assert o.log == ['in', 'out']",
    "a generator exhausted by StopIteration": "g = countdown(1)\nnext(g)\n"
                                              "try:\n    next(g)\nexcept StopIteration:\n"
                                              "    pass\nelse:\n    raise AssertionError",
}
WRONG = {  # the same tests fail where the student's code is wrong, as in plain Python
    "next": "def countdown(n):\n    yield from range(n)\n",
    "compare": "class Money:\n    def __init__(self, cents):\n        self.cents = cents\n"
               "    def __lt__(self, other):\n        return False\n"
               "    def __gt__(self, other):\n        return False\n"
               "    def __ge__(self, other):\n        return False\n"
               "    def __le__(self, other):\n        return False\n",
}


ALWAYS = ("class Yes:\n    def __lt__(self, other):\n        return True\n"
          "    __le__ = __gt__ = __ge__ = __lt__\n"
          "def total(values):\n    return Yes()\n")


def test_an_object_of_the_notebooks_class_never_orders_itself_against_the_instructors_data(
        tmp_path: Path) -> None:
    """As with ``==``: a result whose class says yes to every comparison passes no bound
    the instructor sets with data (``60 < total(x) < 70``); compared with another object
    of the student's, the kernel is asked."""
    nb = new_notebook(cells=[new_code_cell(ALWAYS)])
    clean = clean_names("python", new_notebook(cells=[new_code_cell("import math")]))
    tests = {"bound": "assert 60 < total([1, 2]) < 70",
             "below": "assert total([1]) <= 5",
             "between objects": "assert Yes() < Yes()"}
    res = execute_notebook(nb, "python", [], [], ExecLimits(cell_timeout_s=60,
                                                            total_timeout_s=180),
                           workdir=tmp_path, tests=[InstructorTest(k, t, 30, clean=clean)
                                                    for k, t in tests.items()])
    got = {k: r.status for k, r in res.tests.items()}
    assert got == {"bound": "failed", "below": "failed", "between objects": "passed"}
    assert "notebook's own class (Yes)" in res.tests["bound"].detail


def _verified(tmp_path: Path, code: str) -> dict[str, str]:
    nb = new_notebook(cells=[new_code_cell(code)])
    clean = clean_names("python", new_notebook(cells=[new_code_cell("import math")]))
    res = execute_notebook(nb, "python", [], [], ExecLimits(cell_timeout_s=60,
                                                            total_timeout_s=180),
                           workdir=tmp_path, tests=[InstructorTest(k, t, 30, clean=clean)
                                                    for k, t in TESTS.items()])
    assert res.error == "", res.error
    return {k: (r.status, r.detail) for k, r in res.tests.items()}


def _plain(code: str) -> dict[str, str]:
    """The tests in plain Python against the same code: the real semantics."""
    out = {}
    for name, test in TESTS.items():
        ns: dict = {}
        exec(code, ns)  # our own fixture's code, in plain Python
        try:
            exec(test, ns)
            out[name] = "passed"
        except AssertionError:
            out[name] = "failed"
    return out


def test_every_protocol_a_test_uses_behaves_as_the_real_object(tmp_path: Path) -> None:
    assert _plain(STUDENT) == dict.fromkeys(TESTS, "passed")
    got = _verified(tmp_path, STUDENT)
    assert {k: s for k, (s, _) in got.items()} == dict.fromkeys(TESTS, "passed"), got


@pytest.mark.parametrize("broken", sorted(WRONG))
def test_a_wrong_protocol_fails_as_it_does_in_plain_python(tmp_path: Path, broken: str) -> None:
    code = STUDENT + "\n" + WRONG[broken]
    plain = _plain(code)
    assert plain[broken] == "failed"
    got = _verified(tmp_path, code)
    assert {k: s for k, (s, _) in got.items()} == plain, got
