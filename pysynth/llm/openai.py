"""An OpenAI-compatible HTTP client on the standard library: ``/v1/chat/completions`` and ``/v1/completions``.

No ``openai`` or ``requests`` dependency, and no proxy settings from the environment (the
endpoint is contacted as given). The API key comes from ``$PYSYNTH_LLM_API_KEY`` (or
``$OPENAI_API_KEY``) at request time and is sent as ``Authorization: Bearer``; it is never in a
signature, the cache, a log line or an error message.

Failures: a 429, a 5xx, a timeout or a dropped connection is retried (``retries`` times) after
an exponential backoff with seeded jitter, or after the server's ``Retry-After`` when it sends
one; a 400 is the server refusing the prompt (the row gets ``llm_refused``); any other status
(401, 404, ...) stops the run with one line naming the endpoint and the status.
"""
from __future__ import annotations

import http.client
import json
import os
import random
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Dict, List, Optional, Sequence
from urllib.parse import urlsplit

from pysynth.llm.params import LLMParams, Spec

__all__ = ["OpenAIBackend", "LLMError", "Reply", "api_key", "KEY_ENV"]

#: where the API key is read from, first found wins
KEY_ENV = ("PYSYNTH_LLM_API_KEY", "OPENAI_API_KEY")
#: most seconds one backoff waits (a larger Retry-After is honoured up to this)
MAX_WAIT = 60.0


class LLMError(RuntimeError):
    """A request that cannot succeed (bad status, retries exhausted): the run stops, resumable."""


class Reply(dict):
    """One prompt's answer: ``texts`` (n samples), ``refused``, ``prompt_tokens``, ``completion_tokens``."""


def api_key() -> Optional[str]:
    for name in KEY_ENV:
        v = os.environ.get(name)
        if v:
            return v
    return None


class _Retry(Exception):
    def __init__(self, why: str, after: Optional[float] = None):
        super().__init__(why)
        self.why, self.after = why, after


def apply_stop(text: str, stop: Sequence[str]) -> str:
    """``text`` up to its first stop string (client side: not every server honours ``stop``)."""
    cut = min((i for i in (text.find(s) for s in stop) if i >= 0), default=-1)
    return text if cut < 0 else text[:cut]


class OpenAIBackend:
    """An OpenAI-compatible endpoint (vLLM, llama.cpp, TGI, a hosted API).

    Parameters
    ----------
    spec : Spec
        ``backend == "openai"`` (:func:`pysynth.llm.params.parse_spec`).
    concurrency : int
        Requests in flight at most (one thread each).
    timeout : float
        Seconds per request (connect and read) before it counts as failed and is retried.
    retries : int
        Retries after a 429, 5xx, timeout or dropped connection.
    """

    name = "openai"

    def __init__(self, spec: Spec, concurrency: int = 4, timeout: float = 60.0, retries: int = 4):
        self.spec, self.concurrency, self.timeout, self.retries = spec, int(concurrency), float(timeout), int(retries)
        u = urlsplit(spec.base_url)
        self._https = u.scheme == "https"
        self._host, self._port = u.hostname or "", u.port
        self._path = (u.path.rstrip("/") + ("/chat/completions" if spec.api == "chat" else "/completions"))
        #: called with a counter name and an amount (``requests``, ``retries``, tokens)
        self.count: Callable[[str, int], None] = lambda name, k=1: None

    @property
    def model(self) -> str:
        return self.spec.model

    def complete_many(self, prompts: Sequence[str], params: LLMParams, seeds: Sequence[int],
                      on_reply: Callable[[int, Reply], None]) -> None:
        """Ask every prompt (``concurrency`` at a time); ``on_reply(i, reply)`` as each one lands."""
        def one(i: int) -> None:
            on_reply(i, self.complete(prompts[i], params, seeds[i]))

        if self.concurrency == 1 or len(prompts) == 1:
            for i in range(len(prompts)):
                one(i)
            return
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(prompts)),
                                thread_name_prefix="pysynth-llm") as pool:
            for f in [pool.submit(one, i) for i in range(len(prompts))]:
                f.result()  # the first failure stops the run (what landed is cached)

    def complete(self, prompt: str, params: LLMParams, seed: int) -> Reply:
        """``params.n`` samples of one prompt: one request asking for ``n``, then one request per
        missing sample with seed ``seed + i`` when the server returned fewer."""
        texts: List[str] = []
        pt = ct = empty = 0
        while len(texts) < params.n and empty < 3:  # a server that keeps answering with no choice: give up
            want, s = params.n - len(texts), seed + len(texts)
            doc = self._post(self._body(prompt, params, s, want), s)
            if doc is None:
                return Reply(texts=[], refused=True, prompt_tokens=pt, completion_tokens=ct)
            usage = doc.get("usage") or {}
            pt = pt or int(usage.get("prompt_tokens") or 0)
            ct += int(usage.get("completion_tokens") or 0)
            got = self._texts(doc)[:want]
            empty += not got
            texts.extend(apply_stop(t, params.stop) for t in got)
        return Reply(texts=texts, refused=False, prompt_tokens=pt, completion_tokens=ct)

    # -- one request
    def _body(self, prompt: str, params: LLMParams, seed: int, n: int) -> Dict:
        body = {"model": self.spec.model, "max_tokens": params.max_new_tokens, "temperature": params.temperature,
                "top_p": params.top_p, "seed": int(seed) % (2 ** 31)}
        if n > 1:
            body["n"] = n
        if params.stop:
            body["stop"] = list(params.stop)
        if self.spec.api == "chat":
            body["messages"] = [{"role": "user", "content": prompt}]
        else:
            body["prompt"] = prompt
        return body

    def _texts(self, doc: Dict) -> List[str]:
        choices = sorted(doc.get("choices") or [], key=lambda c: int(c.get("index", 0) or 0))
        out = []
        for c in choices:
            if self.spec.api == "chat":
                t = (c.get("message") or {}).get("content")
            else:
                t = c.get("text")
            out.append(t if isinstance(t, str) else "")
        return out

    def _post(self, body: Dict, seed: int) -> Optional[Dict]:
        """The reply's JSON, None when the server refuses the prompt (400); retries as documented."""
        rng = random.Random(seed)
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        last = ""
        for attempt in range(self.retries + 1):
            if attempt:
                self.count("retries", 1)
            try:
                self.count("requests", 1)
                return self._once(data)
            except _Retry as r:
                last = r.why
                if attempt == self.retries:
                    break
                wait = min(MAX_WAIT, 0.25 * 2 ** attempt) * (0.5 + rng.random())  # seeded jitter
                if r.after is not None:
                    wait = min(MAX_WAIT, max(r.after, 0.0))
                time.sleep(wait)
        raise LLMError(f"openai: POST {self.spec.base_url}{self._path[len(urlsplit(self.spec.base_url).path):]} "
                       f"failed after {self.retries} retries: {last}")

    def _once(self, data: bytes) -> Optional[Dict]:
        cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        conn = cls(self._host, self._port, timeout=self.timeout)
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        key = api_key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        try:
            conn.request("POST", self._path, body=data, headers=headers)
            resp = conn.getresponse()
            raw = resp.read()
            status = resp.status
            after = resp.getheader("Retry-After")
        except (OSError, http.client.HTTPException) as exc:  # timeouts, refused and dropped connections
            raise _Retry(f"{type(exc).__name__}: {exc}"[:200]) from None
        finally:
            conn.close()
        if status == 200:
            try:
                doc = json.loads(raw)
            except ValueError:
                raise _Retry("the reply is not JSON") from None
            if not isinstance(doc, dict):
                raise _Retry("the reply is not a JSON object")
            return doc
        if status == 429 or status >= 500:
            try:
                secs = float(after) if after is not None else None
            except ValueError:
                secs = None
            raise _Retry(f"HTTP {status}", secs)
        if status == 400:
            return None
        msg = raw[:200].decode("utf-8", "replace").replace("\n", " ")
        raise LLMError(f"openai: {self.spec.base_url} answered HTTP {status} ({msg}); check the URL, the model "
                       f"name {self.spec.model!r} and ${KEY_ENV[0]}")
