"""The examples in the docstrings of pysynth.retrieval and pysynth.filtering run, on every backend."""
from __future__ import annotations

import doctest

import pytest

import pysynth.filtering
import pysynth.retrieval
from pysynth import _dispatch


@pytest.mark.parametrize("impl", sorted(_dispatch.available("retrieval")))
@pytest.mark.parametrize("module", [pysynth.retrieval, pysynth.filtering])
def test_docstring_examples(module, impl):
    with _dispatch.force(impl):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
