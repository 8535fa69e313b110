"""Questions for keyword queries, row by row: a row the model cannot read is written with a
``reason`` and counted, never aborting the batch (``pysynth k2q generate``)."""
from __future__ import annotations

import logging
from collections import Counter
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

__all__ = ["REASONS", "check_keywords", "generate_rows"]

log = logging.getLogger(__name__)

#: why a row got no questions (the ``reason`` field; the summary counts them)
REASONS = {
    "no_keywords": "the row has no string field 'keywords'",
    "empty": "the keyword query has no word tokens",
    "out_of_vocabulary": "every token of the keyword query is outside the model vocabulary (it would only see <unk>)",
}


def check_keywords(value: Any, vocab) -> Optional[str]:
    """The reason (a key of :data:`REASONS`) why the model cannot read ``value``, or None when it can.

    Parameters
    ----------
    value : any
        A row's ``keywords`` field.
    vocab : pysynth.models.vocab.Vocab or None
        The model's vocabulary (None: an LLM, which reads any text).

    Returns
    -------
    str or None
    """
    from pysynth.models.vocab import tokenize

    if not isinstance(value, str):
        return "no_keywords"
    toks = tokenize(value)
    if not any(any(c.isalnum() for c in w) for w in toks):
        return "empty"
    if vocab is not None and all(w not in vocab.stoi for w in toks):
        return "out_of_vocabulary"
    return None


def generate_rows(generator, rows: Sequence[Mapping], *, progress: bool = False,
                  **generate_kw) -> Tuple[List[Dict[str, Any]], Dict[str, int]]:
    """One output row per input row: ``{"keywords", "questions", "scores"}``, plus ``"reason"`` (a
    key of :data:`REASONS`) with empty lists where the model cannot read the keywords.

    Parameters
    ----------
    generator : pysynth.models.generate.Generator or pysynth.llm.RoleText2Text
        The loaded K2Q model, or an LLM in the ``k2q`` role (a keyword query it gives no usable
        reply for gets its reason: ``llm_empty``, ``llm_unparsable``, ``llm_refused``).
    rows : sequence of mappings
        Input rows with a ``keywords`` string.
    progress : bool
        A progress bar (terminal) or periodic lines on stderr (:class:`pysynth.pipelines.progress.Progress`).
    **generate_kw
        Passed to :meth:`Generator.generate` (``beam``, ``n``, ``groups``, ...).

    Returns
    -------
    (rows, reasons) : list of dict, dict
        The output rows in input order, and ``{reason: count}`` of the rows without questions.

    Raises
    ------
    ValueError
        When no row has a string ``keywords`` field (the wrong field, most likely).
    """
    from pysynth.pipelines.progress import Progress

    rows = list(rows)
    reasons = [check_keywords(r.get("keywords") if isinstance(r, Mapping) else None, getattr(generator, "vocab", None))
               for r in rows]
    if rows and all(why == "no_keywords" for why in reasons):
        raise ValueError("rows: no row has a string field 'keywords' (e.g. {\"keywords\": \"honda crf top speed\"})")
    ok = [i for i, why in enumerate(reasons) if why is None]
    bar = Progress(len(ok), progress and len(ok) > 0, "k2q generate", unit="queries")
    try:
        res = generator.generate([rows[i]["keywords"] for i in ok], on_batch=bar.update, **generate_kw) if ok else []
    finally:
        bar.close()
    out: List[Dict[str, Any]] = []
    done = dict(zip(ok, res))
    for i, g in done.items():
        if getattr(g, "reason", None):  # an LLM's unusable reply
            reasons[i] = g.reason
    for i, (r, why) in enumerate(zip(rows, reasons)):
        if why is None:
            g = done[i]
            out.append({"keywords": g.source, "questions": g.texts, "scores": [round(s, 6) for s in g.scores]})
        else:
            kw = r.get("keywords") if isinstance(r, Mapping) else None
            out.append({"keywords": kw if isinstance(kw, str) else None, "questions": [], "scores": [],
                        "reason": why})
    counts = dict(sorted(Counter(w for w in reasons if w is not None).items()))
    if counts:
        log.warning("k2q generate: %d of %d keyword queries got no questions: %s", sum(counts.values()),
                    len(rows), ", ".join(f"{k} {v}" for k, v in counts.items()))
    return out, counts
