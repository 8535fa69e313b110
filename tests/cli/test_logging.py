"""The CLI's logging (issue 28): pysynth's lines on stderr, -q keeps warnings only, third-party
INFO noise (faiss's loader lines) hidden unless -v, one prefix, and main() restores the caller's
logging when it returns."""
from __future__ import annotations

import logging
import os

from pysynth.cli._common import configure_logging
from pysynth.pipelines.progress import say


def _emit():
    say("stage line")
    logging.getLogger("pysynth.serve").info("pysynth serve ready: k2q=x")
    logging.getLogger("pysynth.k2q").warning("2 rows got no questions")
    logging.getLogger("faiss.loader").info("Could not load library with AVX512 support")


def test_levels_and_noise(capsys):
    root, before = logging.getLogger(), list(logging.getLogger().handlers)
    restore = configure_logging()
    try:
        logging.basicConfig(level=logging.INFO, format="pysynth serve: %(message)s")  # serve's: a no-op now
        _emit()
        assert os.environ["TRANSFORMERS_NO_ADVISORY_WARNINGS"] == "1"  # "PyTorch was not found" advice off
    finally:
        restore()
    err = capsys.readouterr().err.splitlines()
    assert err == ["stage line", "pysynth serve ready: k2q=x", "pysynth: warning: 2 rows got no questions"]
    assert root.handlers == before and logging.getLogger("pysynth").level == logging.NOTSET

    restore = configure_logging(quiet=True)
    try:
        _emit()
    finally:
        restore()
    assert capsys.readouterr().err.splitlines() == ["pysynth: warning: 2 rows got no questions"]

    restore = configure_logging(verbose=1)
    try:
        _emit()
    finally:
        restore()
    assert "Could not load library with AVX512 support" in capsys.readouterr().err


def test_every_command_has_v_and_q():
    from pysynth.cli import _leaves, build_parser

    for leaf in _leaves(build_parser()):
        opts = leaf._option_string_actions
        assert "--verbose" in opts and "--quiet" in opts, leaf.prog
