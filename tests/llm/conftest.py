"""Fixtures of the LLM tests: llama.cpp's OpenAI-compatible server (llama-cpp-python, built from
PyPI by the ``[test]`` extra) on a tiny random GGUF, a fault-injecting proxy in front of it, and a
tiny random Llama folder for the local backend. Everything runs on 127.0.0.1; the server is
started once per session and stopped at its end."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _servers import FaultProxy, LlamaServer, write_gguf, write_hf_llama  # noqa: E402


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory):
    pytest.importorskip("llama_cpp.server", reason="llama-cpp-python[server] is not installed (the [test] extra "
                                                   "builds it from PyPI: pip install '.[test]')")
    pytest.importorskip("gguf", reason="gguf is not installed (the [test] extra)")
    d = tmp_path_factory.mktemp("llama")
    server = LlamaServer(write_gguf(d / "tiny.gguf"), name="tiny", log=d / "server.log")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def _proxy(llama_server):
    p = FaultProxy(llama_server.port)
    yield p
    p.stop()


@pytest.fixture
def proxy(_proxy):
    """The fault-injecting proxy, its counters and faults reset for each test."""
    _proxy.reset()
    _proxy.slow_s, _proxy.hold_s = 3.0, 0.0
    return _proxy


@pytest.fixture
def spec(proxy):
    """The spec of the server behind the proxy (chat API)."""
    return f"openai:{proxy.url()}?model=tiny"


@pytest.fixture(scope="session")
def hf_llama(tmp_path_factory):
    pytest.importorskip("transformers", reason="transformers is not installed (the [llm] extra)")
    pytest.importorskip("torch", reason="torch is not installed (the [llm] extra)")
    return write_hf_llama(tmp_path_factory.mktemp("hf") / "tiny-llama")
