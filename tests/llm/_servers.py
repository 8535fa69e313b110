"""Real components for the LLM tests: a tiny random llama GGUF served by llama.cpp's OpenAI-compatible
server (llama-cpp-python), a fault-injecting proxy in front of it, and a tiny random Llama folder
for the local backend. Random weights: the tests check protocol, batching, retries, caching,
resume and provenance, not text quality."""
from __future__ import annotations

import http.client
import http.server
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import List, Optional

import numpy as np

WORDS = ("the what who when where which how is was are of in on a an to for and city river year king war "
         "paris france london water people first name river capital question answer").split()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_gguf(path: Path, seed: int = 0, n_embd: int = 64, n_layer: int = 2, n_head: int = 4, n_ff: int = 128,
               n_ctx: int = 1024) -> Path:
    """A llama GGUF with an SPM vocabulary (control tokens, 256 byte tokens, letters, a few words) and
    random float32 weights."""
    import gguf

    rng = np.random.default_rng(seed)
    tokens: List[bytes] = [b"<unk>", b"<s>", b"</s>"]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL]
    tokens += [f"<0x{i:02X}>".encode() for i in range(256)]
    types += [gguf.TokenType.BYTE] * 256
    pieces = list(dict.fromkeys(["\u2581"] + [chr(c) for c in range(ord("a"), ord("z") + 1)]
                                + ["\u2581" + w for w in WORDS] + ["?", "."]))  # ids must be unique
    tokens += [p.encode("utf-8") for p in pieces]
    types += [gguf.TokenType.NORMAL] * len(pieces)
    scores = [0.0] * 259 + [-float(i) for i in range(len(pieces))]
    n_vocab = len(tokens)
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("pysynth-tiny-random-llama")
    w.add_context_length(n_ctx)
    w.add_embedding_length(n_embd)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head)
    w.add_rope_dimension_count(n_embd // n_head)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)

    def t(name, *shape, scale=0.2):
        w.add_tensor(name, (rng.standard_normal(shape) * scale).astype(np.float32))

    t("token_embd.weight", n_vocab, n_embd, scale=1.0)
    w.add_tensor("output_norm.weight", np.ones(n_embd, dtype=np.float32))
    t("output.weight", n_vocab, n_embd, scale=1.0)
    for i in range(n_layer):
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(n_embd, dtype=np.float32))
        w.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(n_embd, dtype=np.float32))
        for n in ("attn_q", "attn_k", "attn_v", "attn_output"):
            t(f"blk.{i}.{n}.weight", n_embd, n_embd)
        t(f"blk.{i}.ffn_gate.weight", n_ff, n_embd)
        t(f"blk.{i}.ffn_up.weight", n_ff, n_embd)
        t(f"blk.{i}.ffn_down.weight", n_embd, n_ff)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


class LlamaServer:
    """``python -m llama_cpp.server`` on 127.0.0.1 and a free port, stopped by :meth:`stop`."""

    def __init__(self, model: Path, name: str = "tiny", log: Optional[Path] = None, n_ctx: int = 1024):
        self.port = free_port()
        self.name = name
        self.log = open(log or os.devnull, "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", name,
             "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", str(n_ctx), "--n_threads", "1",
             "--n_batch", "256", "--verbose", "False"],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited with {self.proc.returncode}")
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                c.request("GET", "/v1/models")
                if c.getresponse().status == 200:
                    c.close()
                    return
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError("llama_cpp.server did not start in 120 s")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def _prompt_of(body: dict) -> str:
    if "messages" in body:
        return "\n".join(str(m.get("content", "")) for m in body["messages"])
    return str(body.get("prompt", ""))


class FaultProxy:
    """A threaded HTTP proxy in front of ``upstream`` that injects faults and counts what it sees.

    ``faults``: a list consumed one per POST: ``None`` (forward), ``("status", code, retry_after)``,
    ``"slow"`` (wait ``slow_s`` before forwarding: past the client's timeout), ``"drop"`` (close
    the connection without a reply), ``"refuse"`` (HTTP 400). Counts: ``posts`` (every POST),
    ``forwarded`` (reached the server), ``prompts`` (forwarded per prompt text), ``max_in_flight``,
    ``auth`` (Authorization headers seen)."""

    def __init__(self, upstream_port: int, slow_s: float = 3.0, hold_s: float = 0.0):
        self.upstream_port, self.slow_s, self.hold_s = upstream_port, slow_s, hold_s
        self.faults: List = []
        self.lock = threading.Lock()
        self.reset()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                self._forward(b"", "GET")

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                data = self.rfile.read(n)
                with proxy.lock:
                    proxy.posts += 1
                    fault = proxy.faults.pop(0) if proxy.faults else None
                    proxy.auth.append(self.headers.get("Authorization"))
                    proxy.bodies.append(json.loads(data or b"{}"))
                if fault == "drop":
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if fault == "refuse":
                    return self._reply(400, b'{"error": "refused"}')
                if isinstance(fault, tuple) and fault[0] == "status":
                    extra = {"Retry-After": str(fault[2])} if fault[2] is not None else {}
                    return self._reply(fault[1], b'{"error": "injected"}', extra)
                if fault == "slow":
                    time.sleep(proxy.slow_s)
                    return self._reply(503, b'{"error": "too late"}')
                with proxy.lock:
                    proxy.in_flight += 1
                    proxy.max_in_flight = max(proxy.max_in_flight, proxy.in_flight)
                try:
                    if proxy.hold_s:
                        time.sleep(proxy.hold_s)  # keep requests in flight together (the concurrency test)
                    with proxy.lock:
                        proxy.forwarded += 1
                        proxy.prompts[_prompt_of(json.loads(data or b"{}"))] += 1
                    reply = self._ask_upstream(data, "POST")
                finally:
                    # out of flight before the client has its answer: a client thread that sends its next
                    # request at once must not find this one still counted (a loaded machine showed 4 of 3)
                    with proxy.lock:
                        proxy.in_flight -= 1
                self._reply(*reply)

            def _ask_upstream(self, data: bytes, method: str):
                c = http.client.HTTPConnection("127.0.0.1", proxy.upstream_port, timeout=120)
                c.request(method, self.path, body=data or None, headers={"Content-Type": "application/json"})
                r = c.getresponse()
                body = r.read()
                c.close()
                return r.status, body

            def _forward(self, data: bytes, method: str):
                self._reply(*self._ask_upstream(data, method))

            def _reply(self, status: int, body: bytes, headers=None):
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def reset(self) -> None:
        with self.lock:
            self.posts = self.forwarded = self.in_flight = self.max_in_flight = 0
            self.prompts: Counter = Counter()
            self.auth: List = []
            self.bodies: List = []
            self.faults = []

    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def write_hf_llama(path: Path, seed: int = 0) -> Path:
    """A tiny random ``LlamaForCausalLM`` folder with a word-level tokenizer (tokenizers) and a chat template."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    torch.manual_seed(seed)
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, "<pad>": 3}
    for w in WORDS + list("abcdefghijklmnopqrstuvwxyz") + ["?", ".", ":", "1", "2", "3"]:
        vocab.setdefault(w, len(vocab))
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="<unk>", bos_token="<s>", eos_token="</s>",
                                  pad_token="<pad>")
    tok.chat_template = ("{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
                         "{% if add_generation_prompt %}assistant:{% endif %}")
    cfg = LlamaConfig(vocab_size=len(vocab), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=2048,
                      bos_token_id=1, eos_token_id=2, pad_token_id=3)
    model = LlamaForCausalLM(cfg).eval()
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(path))
    tok.save_pretrained(str(path))
    return path


def cli(*argv) -> dict:
    """``pysynth ARGV`` in this process; the JSON summary it prints last (or {} when it prints none)."""
    import contextlib
    import io

    from pysynth.cli import main

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main([str(a) for a in argv])
    assert rc == 0, (argv, rc)
    out = buf.getvalue().strip().splitlines()
    return json.loads(out[-1]) if out else {}
