"""Corpus scores of several metrics at once, with the signature of the run (``pysynth score``,
``POST /v1/score``)."""
from __future__ import annotations

from typing import Sequence

#: the ROUGE variants :func:`score_corpus` reports
ROUGE_TYPES = ("rouge1", "rouge2", "rougeL", "rougeLsum")


def score_corpus(
    hyps: Sequence[str],
    refs: Sequence[Sequence[str]],
    metrics: Sequence[str],
    bleu_flavor: str = "sacrebleu",
    rouge_flavor: str = "rouge-score",
    stem: bool = False,
    tokenize: str | None = None,
    lowercase: bool = False,
    workers: int = 1,
) -> dict:
    """Corpus scores on a 0-100 scale: BLEU at corpus level, ROUGE as the mean F-measure, with
    the signature of the run (what ``pysynth score`` prints and ``POST /v1/score`` returns).

    ``metrics``: any of ``bleu``, ``meteor`` (:func:`pysynth.metrics.meteor_score`: Meteor 1.5,
    Java-free; needs the jar's resources from pycocoevalcap) and :data:`ROUGE_TYPES`; the other arguments are
    those of :func:`corpus_bleu` and :func:`rouge`.
    """
    if isinstance(metrics, str):
        raise TypeError(f"metrics: expected a list of metric names, got the str {metrics!r}; e.g. ['bleu', 'rougeL']")
    unknown = [m for m in metrics if m not in ("bleu", "meteor") and m not in ROUGE_TYPES]
    if unknown or not metrics:
        raise ValueError(f"metrics: unknown {unknown or 'empty list'}; choose from bleu, meteor, "
                         f"{', '.join(ROUGE_TYPES)}")
    out: dict = {}
    # each metric's module is imported only when it is asked for (a one-shot METEOR run skips BLEU/ROUGE)
    if "bleu" in metrics:
        from pysynth.metrics.bleu import corpus_bleu

        b = corpus_bleu(hyps, list(refs), flavor=bleu_flavor, tokenize=tokenize, lowercase=lowercase, workers=workers)
        out["bleu"] = b.score if bleu_flavor == "sacrebleu" else 100.0 * b.score
        if bleu_flavor == "coco":
            out["bleu_n"] = [100.0 * x for x in b.bleu_n]
        out["bleu_signature"] = b.signature
    rtypes = [m for m in metrics if m in ROUGE_TYPES]
    if rtypes:
        from pysynth.metrics.rouge_scores import rouge

        r = rouge(hyps, list(refs), types=rtypes, flavor=rouge_flavor, stem=stem, workers=workers)
        for t, v in r.mean().items():
            out[t] = 100.0 * v["f"]
        out["rouge_signature"] = {"flavor": rouge_flavor, "stem": stem, "nrefs": len(refs)}
    if "meteor" in metrics:
        from pysynth.metrics.meteor import meteor

        m = meteor(hyps, list(refs), workers=workers)
        out["meteor"] = 100.0 * m.score
        out["meteor_signature"] = m.signature
    out["n_segments"] = len(hyps)
    from pysynth import signature

    out["signature"] = signature.signature(
        "pysynth.score", 1,
        {"metrics": list(metrics), "bleu_flavor": bleu_flavor, "rouge_flavor": rouge_flavor, "stem": stem,
         "tokenize": tokenize, "lowercase": lowercase},
        {"segments": len(hyps), "references": len(refs), "sha256": signature.fingerprint(hyps, *refs)})
    return out
