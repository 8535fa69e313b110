"""Span and similarity helpers in numpy alone (no torch): what a server needs after an ONNX
span encoder or bi-encoder ran.

* :func:`best_spans` -- the best answer spans from independent start/end logits (SQuAD-style
  extractive QA; Alberti et al. 2019, Sect. 3.1, "independent" scoring).
* :func:`best_joint_spans` -- the best spans of a joint ``[start, end]`` score table (Alberti et
  al. 2019, Sect. 3.1, joint scoring).
* :func:`predict_spans` -- texts in, character spans out (long contexts in windows), for any
  scorer with ``span_scores`` (a torch :class:`~pysynth.models.encoders.SpanEncoder`, an ONNX
  session, a Hugging Face QA model).
* :func:`wordpiece_tokenizer` -- the fast (Rust) BERT WordPiece tokenizer of a ``vocab.txt``.
* :func:`cosine` -- row-wise cosine similarity of bi-encoder embeddings.

Nothing here imports torch: the server runs span models on onnxruntime with these.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from pysynth.decoding.cancel import checkpoint

__all__ = ["best_spans", "best_joint_spans", "predict_spans", "wordpiece_tokenizer", "cosine", "MASK_NEG",
           "check_k_len", "WINDOW_TOKENS", "count_windows"]

MASK_NEG = -1e9  # finite score of impossible positions / spans (ONNX-safe, no inf arithmetic)
#: tokens per span-scorer call of :func:`predict_spans` (4 windows of 256): peak memory of a long
#: context's windows (issue 27; 2 to 16 windows per call ran at the same speed here)
WINDOW_TOKENS = 1024
#: characters per tokenizer batch of :func:`predict_spans` (fewer than ``batch_size`` contexts when
#: they are long; a batch of paragraphs is far below it)
BATCH_CHARS = 200_000


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine similarity of ``a`` and ``b`` ([n, d] each, or [d]); float64."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"a, b: shapes differ ({a.shape} vs {b.shape})")
    na = np.linalg.norm(a, axis=-1)
    nb = np.linalg.norm(b, axis=-1)
    return (a * b).sum(-1) / np.maximum(na * nb, 1e-12)


# ------------------------------------------------------------------------------ numpy span decoding

def _check_mask(mask, T: int, what: str = "mask") -> np.ndarray:
    if mask is None:
        return np.ones(T, dtype=bool)
    m = np.asarray(mask, dtype=bool)
    if m.shape != (T,):
        raise ValueError(f"{what}: expected shape ({T},), got {m.shape}")
    return m


def check_k_len(k, max_len) -> None:
    """ValueError unless ``k`` (spans wanted) and ``max_len`` (longest span) are positive integers."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k: must be a positive integer, got {k!r}")
    if isinstance(max_len, bool) or not isinstance(max_len, (int, np.integer)) or max_len < 1:
        raise ValueError(f"max_len: must be a positive integer, got {max_len!r}")


def _topk_band(scores: np.ndarray, ok: np.ndarray, k: int) -> List[Tuple[int, int, float]]:
    """Top ``k`` of a [T, L] band (span ``(i, i + l)``), score descending then (start, end) ascending."""
    T, L = scores.shape
    flat = np.where(ok, scores, -np.inf).reshape(-1)
    n_ok = int(ok.sum())
    if n_ok == 0:
        return []
    k = min(k, n_ok)
    # flat index i * L + l orders spans by (start, length) = (start, end) for a fixed start
    order = np.lexsort((np.arange(flat.size), -flat))[:k]
    return [(int(j // L), int(j // L + j % L), float(flat[j])) for j in order]


def best_spans(start_logits, end_logits, max_len: int = 30, k: int = 1, mask=None) -> List[Tuple[int, int, float]]:
    """The ``k`` best spans ``(start, end, start_logits[start] + end_logits[end])`` of one sequence.

    Pure numpy. Spans satisfy ``start <= end < start + max_len`` with both ends where ``mask``
    (e.g. the context tokens) is True. Order: score descending, then ``(start, end)`` ascending.
    Fewer than ``k`` are returned when fewer spans exist.

    Parameters
    ----------
    start_logits, end_logits : [T] array-like
    max_len : int
        Longest span in tokens.
    k : int
    mask : [T] bool, optional
        Allowed positions (default: all).
    """
    s = np.asarray(start_logits, dtype=np.float64)
    e = np.asarray(end_logits, dtype=np.float64)
    if s.ndim != 1 or e.shape != s.shape:
        raise ValueError(f"start_logits, end_logits: expected two [T] arrays, got {s.shape} and {e.shape}")
    check_k_len(k, max_len)
    T = s.shape[0]
    m = _check_mask(mask, T)
    L = int(min(max_len, T))
    idx = np.arange(T)[:, None] + np.arange(L)[None, :]  # [T, L] end positions
    inside = idx < T
    idx_c = np.minimum(idx, T - 1)
    ok = inside & m[:, None] & m[idx_c]
    return _topk_band(s[:, None] + e[idx_c], ok, int(k))


def best_joint_spans(joint, k: int = 1, mask=None, max_len: Optional[int] = None) -> List[Tuple[int, int, float]]:
    """The ``k`` best distinct spans ``(start, end, score)`` of one sequence's joint scores.

    ``joint`` [T, L] holds ``f(i, i + l)`` (:class:`SpanScores`.joint of one row; Alberti et al.
    2019, Sect. 3.1). ``mask`` [T] limits both ends (e.g. to the context); ``max_len`` (<= L)
    shortens spans further. Scores at or below ``MASK_NEG / 2`` count as impossible.
    """
    j = np.asarray(joint, dtype=np.float64)
    if j.ndim != 2:
        raise ValueError(f"joint: expected [T, L], got shape {j.shape}")
    T, L = j.shape
    check_k_len(k, max_len if max_len is not None else max(L, 1))
    m = _check_mask(mask, T)
    if max_len is not None:
        L = min(L, int(max_len))
        j = j[:, :L]
    idx = np.arange(T)[:, None] + np.arange(L)[None, :]
    idx_c = np.minimum(idx, T - 1)
    ok = (idx < T) & m[:, None] & m[idx_c] & (j > MASK_NEG / 2)
    return _topk_band(j, ok, int(k))


def predict_spans(scorer, tokenizer, contexts: Sequence[str], questions: Optional[Sequence[str]] = None,
                  k: int = 1, max_answer_len: int = 30, max_length: int = 384, stride: int = 128,
                  joint: bool = False, batch_size: int = 16, max_tokens: Optional[int] = WINDOW_TOKENS
                  ) -> List[List[Dict[str, Any]]]:
    """Top-k answer spans of ``contexts`` as text, for answer extraction and extractive QA.

    Contexts longer than ``max_length`` tokens are read in overlapping windows (``stride``
    tokens of overlap, the SQuAD "doc stride"); candidates of all windows compete, and the
    no-answer score is the smallest of the windows' (as in BERT's SQuAD 2.0 decoding). The
    scorer sees at most ``max_tokens`` tokens (windows x padded length) per call and each call's
    scores are reduced to candidates before the next, so peak memory does not grow with the
    length of a context (issue 27: one 100,000-character context took 4.7 GB when its 131
    windows ran in one call). The windows' padding is the tokenizer batch's, whatever the calls,
    so the scores, and the spans, do not depend on ``max_tokens``.

    Parameters
    ----------
    scorer : an object with ``span_scores(input_ids, attention_mask, token_type_ids)`` returning
        numpy ``start_logits``, ``end_logits``, ``null_score`` (and ``joint``):
        :class:`SpanEncoder`, :class:`pysynth.models.hf.HFSpanModel`.
    tokenizer : a fast Hugging Face tokenizer (offsets and windows are needed).
    contexts : texts to extract from.
    questions : optional; pairs ``(question, context)`` are encoded (extractive QA), otherwise
        the context alone (answer extraction).
    k : spans per context, distinct by text.
    max_answer_len : longest span in tokens.
    max_length, stride : window size and overlap in tokens (``stride < max_length`` minus the
        question and special tokens).
    joint : rank with the joint head's scores (Alberti et al. 2019, Sect. 3.1) instead of
        ``start + end``.
    batch_size : contexts per tokenizer call (fewer where they pass :data:`BATCH_CHARS` characters).
    max_tokens : tokens per scorer call (at least one window; None: a whole tokenizer batch per
        call). The joint head holds ~240 KB per token: 1024 tokens are ~250 MB.

    Returns
    -------
    per context, up to ``k`` dicts ``{"text", "start", "end" (character offsets), "score",
    "null_score"}``, best first; ``score - null_score`` is the SQuAD 2.0 answerability margin.
    """
    if isinstance(contexts, str):
        raise TypeError("contexts: must be a sequence of strings (wrap a single text in a list)")
    if questions is not None and (isinstance(questions, str) or len(questions) != len(contexts)):
        raise ValueError("questions: must be a sequence with one question per context")
    check_k_len(k, max_answer_len)
    if isinstance(stride, bool) or not isinstance(stride, int) or not 0 <= stride < max_length:
        raise ValueError(f"stride: must be an integer in [0, max_length={max_length}), got {stride!r}")
    if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int)
                                   or max_tokens < 1):
        raise ValueError(f"max_tokens: must be a positive integer or None, got {max_tokens!r}")
    results: List[List[Dict[str, Any]]] = []
    ctx_seq = 1 if questions is not None else 0
    for b, z in _batches([len(c) + (len(questions[i]) if questions is not None else 0)
                          for i, c in enumerate(contexts)], batch_size, BATCH_CHARS):
        ctx = list(contexts[b:z])
        args = (list(questions[b:z]), ctx) if questions is not None else (ctx,)
        enc = tokenizer(*args, truncation="only_second" if questions is not None else True, max_length=max_length,
                        stride=stride, return_overflowing_tokens=True, padding=True, return_offsets_mapping=True,
                        return_tensors="np")
        owner = np.asarray(enc["overflow_to_sample_mapping"])  # window -> context
        cands: List[list] = [[] for _ in ctx]
        null = np.full(len(ctx), np.inf)
        step = len(owner) if max_tokens is None else max(1, max_tokens // max(1, enc["input_ids"].shape[1]))
        for w0 in range(0, len(owner), step):
            checkpoint()  # a served request that timed out stops here (pysynth.decoding.cancel; a no-op otherwise)
            _window_candidates(scorer, enc, owner, w0, min(w0 + step, len(owner)), ctx_seq, joint, k,
                               max_answer_len, cands, null)
        for r, text in enumerate(ctx):
            seen, out = set(), []
            for score, a, z in sorted(cands[r], key=lambda c: (-c[0], c[1], c[2])):
                if text[a:z] in seen:
                    continue
                seen.add(text[a:z])
                out.append({"text": text[a:z], "start": a, "end": z, "score": score, "null_score": float(null[r])})
                if len(out) == k:
                    break
            results.append(out)
    return results


def _batches(sizes: Sequence[int], batch_size: int, max_chars: int):
    """``(start, stop)`` of tokenizer batches: ``batch_size`` texts, fewer where they would pass
    ``max_chars`` characters in all (a longer text alone), so that a batch's encodings (~450 B
    per window token) stay bounded too."""
    b = 0
    while b < len(sizes):
        z, chars = b + 1, sizes[b]
        while z < len(sizes) and z - b < batch_size and chars + sizes[z] <= max_chars:
            chars += sizes[z]
            z += 1
        yield b, z
        b = z


def count_windows(n_tokens: int, max_length: int = 256, stride: int = 96, reserved: int = 2) -> int:
    """How many windows :func:`predict_spans` reads a text of ``n_tokens`` wordpieces in.

    ``reserved``: tokens of a window that are not the text's (2 special tokens alone; a question
    and 3 special tokens in QA). Each window holds ``max_length - reserved`` text tokens and
    overlaps the one before by ``stride`` (the tokenizer's overflowing windows).

    >>> count_windows(200), count_windows(20753)
    (1, 131)
    """
    room = max_length - reserved
    if room <= stride:
        raise ValueError(f"stride: must be below max_length - reserved = {room}, got {stride}")
    if n_tokens <= room:
        return 1
    return 1 + -(-(n_tokens - room) // (room - stride))


def _window_candidates(scorer, enc, owner, w0: int, w1: int, ctx_seq: int, joint: bool, k: int,
                       max_answer_len: int, cands: List[list], null: np.ndarray) -> None:
    """Score windows ``[w0, w1)`` of ``enc`` in one scorer call; add their top spans ``(score, start
    char, end char)`` to ``cands`` and lower ``null`` (both indexed by context)."""
    sl = slice(w0, w1)
    tt = enc.get("token_type_ids")
    sc = scorer.span_scores(enc["input_ids"][sl], enc["attention_mask"][sl], None if tt is None else tt[sl])
    for i, w in enumerate(range(w0, w1)):
        r = int(owner[w])
        mask = np.array([sid == ctx_seq for sid in enc.sequence_ids(w)], dtype=bool)
        # over-fetch: spans with equal text (different tokens or windows) collapse to one
        if joint:
            spans = best_joint_spans(sc["joint"][i], 4 * k, mask, max_answer_len)
        else:
            spans = best_spans(sc["start_logits"][i], sc["end_logits"][i], max_answer_len, 4 * k, mask)
        offs = enc["offset_mapping"][w]
        cands[r] += [(score, int(offs[s][0]), int(offs[e][1])) for s, e, score in spans]
        null[r] = min(null[r], float(sc["null_score"][i]))


def wordpiece_tokenizer(vocab_file, do_lower_case: bool = True):
    """A fast BERT WordPiece tokenizer from a ``vocab.txt`` (one token a line, id = line number;
    transformers 4 and 5 spell the argument differently)."""
    import inspect

    from transformers import BertTokenizerFast

    vocab_file = Path(vocab_file)
    if not vocab_file.is_file():
        raise ValueError(f"vocab_file: {str(vocab_file)!r} does not exist")
    if "vocab" in inspect.signature(BertTokenizerFast.__init__).parameters:  # transformers >= 5
        tokens = vocab_file.read_text(encoding="utf-8").split("\n")[:-1]
        return BertTokenizerFast(vocab={t: i for i, t in enumerate(tokens)}, do_lower_case=do_lower_case)
    return BertTokenizerFast(vocab_file=str(vocab_file), do_lower_case=do_lower_case)
