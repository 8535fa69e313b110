"""Roundtrip-consistent synthetic QA generation (Alberti et al. 2019, "Synthetic QA Corpora
Generation with Roundtrip Consistency", ACL).

For each context C: extract an answer A (:meth:`models.SpanModel.extract`, joint span scores,
Sect. 3.1), generate a question Q from (C, A) (:class:`models.QuestionGenerator`, Sect. 3.2-3.3),
answer Q on C to get A' (:meth:`models.SpanModel.answer`), keep (C, Q, A) iff A' matches A
(:func:`pipeline.roundtrip_decision`, ``match="exact"``) or, the default with the shipped models, iff
the learned filter's score reaches its threshold (:mod:`pysynth.qagen.filter`); add SQuAD 2.0-style unanswerables
(:func:`pipeline.add_unanswerables`).

* :mod:`pysynth.qagen.data` -- context readers (SQuAD JSON, JSONL, plain text), SQuAD answer
  normalisation / EM / F1, the question generator's marked input.
* :mod:`pysynth.qagen.models` -- the span model (answer extraction + QA) and the question
  generator on onnxruntime, torch or local Hugging Face folders.
* :mod:`pysynth.qagen.pipeline` -- :class:`QAGenerator` and the roundtrip filter.
* :mod:`pysynth.qagen.filter` -- the learned roundtrip filter (issue 26) and its coefficients.
* :mod:`pysynth.qagen.jobs` -- ``pysynth qagen generate``: resumable, signed, local or Ray.
* :mod:`pysynth.qagen.evaluate` -- ``pysynth qagen evaluate``: kept vs discarded correctness,
  recall@10 joint vs independent, keep rate, QA EM/F1.
* :mod:`pysynth.qagen.train` -- training the shipped models on SQuAD.

Nothing here imports torch unless a torch-backed model is loaded.
"""
from pysynth.qagen.data import Context, exact_match, f1_score, normalize_answer, read_contexts, read_squad
from pysynth.qagen.pipeline import QAGenConfig, QAGenerator, roundtrip_decision

__all__ = ["Context", "read_contexts", "read_squad", "normalize_answer", "exact_match", "f1_score", "QAGenConfig",
           "QAGenerator", "roundtrip_decision"]
