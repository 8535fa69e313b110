"""Table 9-style check of duplicate question generation (Rücklé et al. 2019, Appendix A.2): copy
vs no-copy generators trained on some sites, generating titles for another site's questions.

Rows: each ``--model NAME=RUN`` (a ``python -m pysynth.dup.dqg train`` run folder, torch backend,
or an ONNX export) and two references without a generator: the body paragraph's first 12 words
("lead-12", the headline-generation baseline) and the body paragraph itself (the WS-TB side: only
its title P@1/MRR is meaningful). Scores from :func:`pysynth.dup.dqg.evaluate`.

    python experiments/dqg_table9.py --target D/ai --model copy=RUN1 --model no-copy=RUN2 --out results.json
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def _reference_rows(dumps):
    from pysynth import metrics
    from pysynth.dup.dqg import _title_retrieval, training_rows

    rows, _ = training_rows(dumps, holdout_linked=False)
    out = {}
    for name, hyps in (("lead-12 of the body", [" ".join(r["body"].split()[:12]) for r in rows]),
                       ("body paragraph (WS-TB side)", [r["body"] for r in rows])):
        s = metrics.score_corpus(hyps, [[r["title"] for r in rows]], ["bleu", "rouge1", "rouge2", "rougeL"],
                                 lowercase=True)
        p1, rr = _title_retrieval(hyps, rows)
        out[name] = {"questions": len(rows), "bleu": round(s["bleu"], 2),
                     **{k: round(s[k], 2) for k in ("rouge1", "rouge2", "rougeL")},
                     "title_p_at_1": round(100 * p1, 2), "title_mrr": round(100 * rr, 2)}
    return out


def main() -> None:
    from pysynth.dup.dqg import evaluate

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--target", action="append", required=True, help="target site dump(s)")
    p.add_argument("--model", action="append", required=True, metavar="NAME=RUN")
    p.add_argument("--beam", type=int, default=1)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    res = {"targets": a.target, "beam": a.beam, "date": time.strftime("%Y-%m-%d"), "rows": {}}
    for spec in a.model:
        name, run = spec.split("=", 1)
        backend = "onnx" if (Path(run) / "encoder.onnx").is_file() else "torch"
        r = evaluate(run, a.target, backend=backend, beam=a.beam)
        log = [json.loads(x) for x in (Path(run) / "train_log.jsonl").read_text().splitlines()]
        evals = [x for x in log if "dev_bleu" in x]
        r["train_steps"] = max((x.get("step", 0) for x in log), default=0)
        r["best_source_dev_bleu"] = round(max((x["dev_bleu"] for x in evals), default=0.0), 2)
        res["rows"][name] = r
        print(name, json.dumps({k: v for k, v in r.items() if k != "examples"}), flush=True)
    res["rows"].update(_reference_rows(a.target))
    Path(a.out).write_text(json.dumps(res, indent=1, ensure_ascii=False) + "\n")
    print(json.dumps({k: {m: v for m, v in r.items() if m != "examples"} for k, r in res["rows"].items()}, indent=1))


if __name__ == "__main__":
    main()
