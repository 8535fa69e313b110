"""``pysynth report``: one static HTML page on the quality of a job's output.

:func:`write_report` reads what a generating command wrote (the rows and ``OUT.meta.json``,
:func:`pysynth.datasets.runs.read_run`) and writes one self-contained HTML file (inline CSS, SVG
and a few lines of script; no external asset, no URL, so it opens offline and can be mailed):

* the run: method and paper, models and fingerprints, configuration, input fingerprint;
* keep rate and the drops per reason (the summary's counts and the rows' ``reason``);
* the length (words) and question-word distributions of the generated texts;
* diversity: distinct-1/2/3 (Li et al. 2016) and self-BLEU (Zhu et al. 2018, Texygen: each text
  scored with nltk BLEU-4, smoothing method 1, against every other text of a seeded sample) through
  :mod:`pysynth.metrics`;
* well-formedness (:func:`pysynth.quality.wellformedness`, Faruqui & Das 2018): the run's
  ``wellformed`` column, else scored on a seeded sample when the shipped model and onnxruntime are
  there (skipped with a note otherwise); similarity and the other score columns, when present;
* a browsable, filterable sample of kept and discarded rows (every text HTML-escaped).

The numbers come from :func:`report_data` (a JSON-able dict), the page from :func:`render_html`.
"""
from __future__ import annotations

import html
import json
import math
import os
import random
import re
import statistics
from collections import Counter
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from pysynth.datasets.runs import Run, drop_counts, read_run, texts_of

__all__ = ["distinct_n", "self_bleu", "question_word", "report_data", "render_html", "write_report",
           "QUESTION_WORDS"]

PathLike = Union[str, "os.PathLike[str]"]

#: the words a question opens with (wh-words first, then the auxiliaries of yes/no questions)
QUESTION_WORDS = ("what", "who", "whom", "whose", "which", "when", "where", "why", "how", "is", "are", "was",
                  "were", "do", "does", "did", "can", "could", "will", "would", "should", "has", "have")
_WH = frozenset(QUESTION_WORDS[:9])
_WORD = re.compile(r"[a-z0-9']+")


def _tokens(texts: Sequence[str]) -> List[List[str]]:
    from pysynth.metrics import tokenize

    return tokenize([t.lower() for t in texts], "13a") if texts else []


def distinct_n(texts: Sequence[str], n: int) -> float:
    """Distinct-n (Li et al. 2016): distinct word n-grams over all word n-grams of ``texts``
    (lower-cased, sacrebleu's 13a tokens); 0.0 when there is no n-gram.

    Examples
    --------
    >>> distinct_n(["a b c", "a b d"], 1)
    0.6666666666666666
    """
    if n < 1:
        raise ValueError(f"n: must be >= 1, got {n}")
    grams: Counter = Counter()
    for toks in _tokens(list(texts)):
        grams.update(tuple(toks[i:i + n]) for i in range(len(toks) - n + 1))
    total = sum(grams.values())
    return len(grams) / total if total else 0.0


def self_bleu(texts: Sequence[str], *, max_texts: int = 200, seed: int = 0) -> Optional[float]:
    """Self-BLEU (Zhu et al. 2018, Texygen): the mean sentence BLEU-4 of each text against all the
    others (nltk flavor, smoothing method 1, lower-cased 13a tokens), over a seeded sample of at
    most ``max_texts`` non-empty texts. Higher means less diverse. None for fewer than two texts.

    Examples
    --------
    >>> round(self_bleu(["the cat sat on the mat", "the cat sat on the mat"]), 3)
    1.0
    """
    from pysynth.metrics import sentence_bleu

    pool = [" ".join(t) for t in _tokens([x for x in texts if x.strip()]) if t]
    if len(pool) > max_texts:
        pool = random.Random(seed).sample(pool, max_texts)
    if len(pool) < 2:
        return None
    streams = [[pool[j if j < i else j + 1] for i in range(len(pool))] for j in range(len(pool) - 1)]
    return float(sentence_bleu(pool, streams, flavor="nltk", smooth_method=1).mean())


def question_word(text: str) -> str:
    """The question word ``text`` opens with (:data:`QUESTION_WORDS`), else ``"other"``."""
    words = _WORD.findall(text.lower())
    return words[0] if words and words[0] in QUESTION_WORDS else "other"


def _numbers(rows: List[dict], column: str) -> List[float]:
    out: List[float] = []
    for r in rows:
        v = r.get(column)
        for x in v if isinstance(v, list) else [v]:
            if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x):
                out.append(float(x))
    return out


def _score_columns(rows: List[dict], skip: Sequence[str]) -> List[str]:
    """Columns holding floats (or lists of floats): the scores a method records."""
    seen: Dict[str, bool] = {}
    for r in rows[:500]:
        for k, v in r.items():
            if k in skip:
                continue
            items = v if isinstance(v, list) else [v]
            if any(isinstance(x, float) for x in items):
                seen.setdefault(k, True)
            if any(isinstance(x, str) for x in items):
                seen[k] = False
    return [k for k, ok in seen.items() if ok]


def _wellformed(run: Run, texts: List[str], mode: str, max_texts: int, seed: int) -> Dict[str, Any]:
    """Well-formedness: the run's column, else scored (mode ``auto``: when it can be; ``off``: never)."""
    have = _numbers(run.kept, "wellformed")
    if have:
        return {"source": "the run's wellformed column", "values": have}
    if mode == "off":
        return {"skipped": "not asked for (--wellformed off)"}
    if not texts:
        return {"skipped": "no generated text"}
    pool = texts if len(texts) <= max_texts else random.Random(seed).sample(texts, max_texts)
    try:
        from pysynth.quality import wellformedness

        values = [float(x) for x in wellformedness(pool)]
    except (ImportError, OSError, ValueError, LookupError, RuntimeError) as exc:
        if mode == "on":
            raise
        return {"skipped": f"the well-formedness model could not run here ({' '.join(str(exc).split())[:200]})"}
    return {"source": f"scored by wellformed-minilm on {len(pool):,} kept texts (seed {seed})", "values": values}


def _describe(values: Sequence[float]) -> Dict[str, float]:
    if not values:
        return {}
    return {"n": len(values), "mean": statistics.fmean(values), "median": statistics.median(values),
            "min": min(values), "max": max(values)}


def _sample(rows: List[dict], k: int, seed: int) -> List[dict]:
    if len(rows) <= k:
        return list(rows)
    idx = sorted(random.Random(seed).sample(range(len(rows)), k))
    return [rows[i] for i in idx]


def report_data(run: Run, *, wellformed: str = "auto", sample: int = 100, seed: int = 0,
                max_scored: int = 1000, field: Optional[str] = None) -> Dict[str, Any]:
    """Every number of the report, as a JSON-able dict.

    Parameters
    ----------
    run : Run
        The job's output (:func:`pysynth.datasets.runs.read_run`).
    wellformed : {"auto", "on", "off"}
        Score the well-formedness of the kept texts when the run has no ``wellformed`` column:
        ``auto`` when the model can run (skipped with a note otherwise), ``on`` always (an error when
        it cannot), ``off`` never.
    sample : int
        Rows shown per table (kept, discarded), drawn with ``seed``.
    seed : int
        The seed of every sample (rows shown, self-BLEU, well-formedness).
    max_scored : int
        At most this many texts are scored for well-formedness.
    field : str, optional
        The column of generated text (default: the method's).

    Returns
    -------
    dict
    """
    if wellformed not in ("auto", "on", "off"):
        raise ValueError(f"wellformed: one of auto, on, off; got {wellformed!r}")
    if sample < 0:
        raise ValueError(f"sample: must be >= 0, got {sample}")
    m = run.method
    text_col = field or m.text
    if run.rows and text_col and not any(text_col in r for r in run.rows[:1000]):
        raise ValueError(f"--field: no column {text_col!r} in {run.path}; columns: {sorted(run.rows[0])}")
    kept, gone = run.kept, run.discarded
    texts, gone_texts = texts_of(kept, text_col), texts_of(gone, text_col)
    dropped = sum(r["dropped"] for r in run.rows if isinstance(r.get("dropped"), int)
                  and not isinstance(r["dropped"], bool))
    lengths = [len(t.split()) for t in texts]
    qwords = Counter(question_word(t) for t in texts)
    any_q = sum(1 for t in texts if _WH & set(_WORD.findall(t.lower())))
    scores = {c: _numbers(kept, c) for c in _score_columns(kept, ("wellformed",))}
    return {
        "file": run.path.name, "format": run.format, "method": m.name, "paper": m.paper,
        "text_column": text_col, "source_column": m.source, "signature": run.signature, "summary": run.summary,
        "rows": len(run.rows), "kept_rows": len(kept), "discarded_rows": len(gone),
        "texts": len(texts), "texts_dropped": dropped, "drops": drop_counts(run),
        "lengths": lengths, "length_stats": _describe(lengths),
        "discarded_length_stats": _describe([len(t.split()) for t in gone_texts]),
        "question_words": dict(qwords.most_common()), "with_wh_word": any_q,
        "distinct": {f"distinct-{n}": distinct_n(texts, n) for n in (1, 2, 3)},
        "self_bleu": self_bleu(texts, seed=seed), "unique_texts": len(set(texts)),
        "wellformed": _wellformed(run, texts, wellformed, max_scored, seed),
        "scores": {c: v for c, v in scores.items() if v},
        "sample_kept": _sample(kept, sample, seed), "sample_discarded": _sample(gone, sample, seed),
        "seed": seed,
    }


# ------------------------------------------------------------------------------------ HTML

def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:,.4g}" if abs(v) < 1e5 else f"{v:,.0f}"
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return str(v) if isinstance(v, str) else json.dumps(v, ensure_ascii=False)


def svg_bars(items: Sequence[tuple], title: str, *, width: int = 520, unit: str = "") -> str:
    """A horizontal bar chart (inline SVG) of ``(label, value)`` pairs."""
    if not items:
        return f'<p class="muted">{_e(title)}: nothing to show</p>'
    top = max(v for _, v in items) or 1
    bar_h, label_w, h = 18, 250, 22 * len(items) + 28
    out = [f'<svg role="img" aria-label="{_e(title)}" width="{width}" height="{h}" viewBox="0 0 {width} {h}">',
           f'<text x="0" y="14" class="t">{_e(title)}</text>']
    for i, (label, v) in enumerate(items):
        y = 24 + 22 * i
        w = max(1.0, (width - label_w - 70) * v / top)
        out += [f'<text x="{label_w - 6}" y="{y + 13}" text-anchor="end">{_e(str(label)[:40])}</text>',
                f'<rect x="{label_w}" y="{y}" width="{w:.1f}" height="{bar_h}" class="b"><title>{_e(label)}: '
                f'{_e(_fmt(v))}{_e(unit)}</title></rect>',
                f'<text x="{label_w + w + 4:.1f}" y="{y + 13}">{_e(_fmt(v))}{_e(unit)}</text>']
    return "\n".join(out + ["</svg>"])


def svg_histogram(values: Sequence[float], title: str, *, bins: int = 20, lo: Optional[float] = None,
                  hi: Optional[float] = None, integer: bool = False, width: int = 520, height: int = 170) -> str:
    """A histogram (inline SVG) of ``values``: ``bins`` equal bins over [lo, hi] (default: the data's
    range; ``integer``: one bin per integer, the last one open)."""
    if not values:
        return f'<p class="muted">{_e(title)}: no values</p>'
    lo = min(values) if lo is None else lo
    hi = max(values) if hi is None else hi
    if integer:
        lo, hi = int(lo), int(min(hi, lo + 39))
        edges = [float(x) for x in range(lo, hi + 2)]
        labels = [str(x) for x in range(lo, hi + 1)]
        labels[-1] += "+" if max(values) > hi else ""
    else:
        hi = hi if hi > lo else lo + 1.0
        edges = [lo + (hi - lo) * i / bins for i in range(bins + 1)]
        labels = [f"{edges[i]:.3g}–{edges[i + 1]:.3g}" for i in range(bins)]
    counts = [0] * (len(edges) - 1)
    for v in values:
        i = int(v - lo) if integer else int((v - lo) / (hi - lo) * bins)
        counts[min(max(i, 0), len(counts) - 1)] += 1
    top, n = max(counts) or 1, len(counts)
    pw, ph, x0 = width - 50, height - 40, 40
    bw = pw / n
    out = [f'<svg role="img" aria-label="{_e(title)}" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}">', f'<text x="0" y="14" class="t">{_e(title)}</text>',
           f'<text x="{x0 - 4}" y="{24}" text-anchor="end">{top:,}</text>',
           f'<line x1="{x0}" y1="{20 + ph}" x2="{x0 + pw}" y2="{20 + ph}" class="ax"/>']
    for i, c in enumerate(counts):
        h = ph * c / top
        out.append(f'<rect x="{x0 + i * bw + 1:.1f}" y="{20 + ph - h:.1f}" width="{max(bw - 2, 1):.1f}" '
                   f'height="{h:.1f}" class="b"><title>{_e(labels[i])}: {c:,}</title></rect>')
    step = max(1, n // 8)
    for i in range(0, n, step):
        lab = labels[i] if integer else f"{edges[i]:.3g}"
        out.append(f'<text x="{x0 + i * bw + bw / 2:.1f}" y="{height - 6}" text-anchor="middle">{_e(lab)}</text>')
    return "\n".join(out + ["</svg>"])


_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{background:#1d2a44;color:#fff;padding:18px 28px}header h1{margin:0 0 4px;font-size:21px}
header p{margin:0;opacity:.85}main{padding:14px 28px 40px;max-width:1180px}
section{background:#fff;border:1px solid #dde1e7;border-radius:8px;padding:14px 18px;margin:14px 0}
h2{font-size:17px;margin:0 0 10px}.grid{display:flex;flex-wrap:wrap;gap:18px}
.kpi{display:flex;flex-wrap:wrap;gap:12px;margin-bottom:8px}.kpi div{background:#eef2f8;border-radius:6px;
padding:8px 14px;min-width:120px}.kpi b{display:block;font-size:20px}.kpi span{font-size:12px;color:#55607a}
table{border-collapse:collapse;width:100%;font-size:13px}td,th{border-bottom:1px solid #e6e9ee;padding:4px 6px;
text-align:left;vertical-align:top}th{background:#f1f3f6;position:sticky;top:0}
td.n{text-align:right;font-variant-numeric:tabular-nums}.muted{color:#6b7487}
svg text{font:11px system-ui,sans-serif;fill:#33405a}svg text.t{font-weight:600;font-size:12px}
svg rect.b{fill:#4c78a8}svg .ax{stroke:#99a}.rows{max-height:520px;overflow:auto;border:1px solid #e6e9ee}
.src{color:#55607a;max-width:420px}.reason{color:#b23b3b;font-weight:600}code{font-size:12px}
input[type=search]{padding:5px 8px;width:320px;margin:4px 0 8px;border:1px solid #c5cbd6;border-radius:5px}
details summary{cursor:pointer;font-weight:600;margin:6px 0}
"""

_JS = """
document.querySelectorAll('input[data-filter]').forEach(function (box) {
  box.addEventListener('input', function () {
    var q = box.value.toLowerCase(), shown = 0, rows = document.querySelectorAll(box.dataset.filter + ' tbody tr');
    rows.forEach(function (tr) { var hit = tr.textContent.toLowerCase().indexOf(q) >= 0;
      tr.style.display = hit ? '' : 'none'; shown += hit; });
    document.getElementById(box.dataset.count).textContent = shown + ' of ' + rows.length + ' rows';
  });
});
document.body.dataset.state = 'ready';
"""


def _kv_table(d: Mapping[str, Any]) -> str:
    rows = "".join(f"<tr><td><code>{_e(k)}</code></td><td>{_e(_fmt(v))}</td></tr>" for k, v in d.items())
    return f"<table><tbody>{rows}</tbody></table>" if rows else '<p class="muted">none recorded</p>'


def _clip(v: Any, n: int = 400) -> str:
    s = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
    return s if len(s) <= n else s[:n] + " …"


def _rows_table(rows: List[dict], tid: str, text_col: str, source_col: str, total: int) -> str:
    if not rows:
        return '<p class="muted">no rows</p>'
    extra = [c for c in ("answer_text", "wellformed", "similarity", "scores", "reason")
             if any(r.get(c) not in (None, "", []) for r in rows)]
    cols = [c for c in (source_col, text_col) if c] + [c for c in extra if c not in (source_col, text_col)]
    head = "".join(f"<th>{_e(c)}</th>" for c in ["#"] + cols)
    body = []
    for i, r in enumerate(rows):
        cells = [f'<td class="n">{i + 1}</td>']
        for c in cols:
            cls = ' class="src"' if c == source_col else (' class="reason"' if c == "reason" else "")
            v = r.get(c)
            cells.append(f"<td{cls}>{'' if v is None else _e(_clip(v, 260 if c == source_col else 400))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (f'<input type="search" placeholder="filter these rows" data-filter="#{tid}" data-count="{tid}-n" '
            f'aria-label="filter"> <span id="{tid}-n" class="muted">{len(rows)} of {len(rows)} rows shown '
            f'(a seeded sample of {total:,})</span><div class="rows"><table id="{tid}"><thead><tr>{head}</tr>'
            f"</thead><tbody>{''.join(body)}</tbody></table></div>")


def _run_section(d: Mapping[str, Any]) -> str:
    sig = d["signature"]
    models = sig.get("models") or {}
    mrows = "".join(f"<tr><td>{_e(role)}</td><td><code>{_e(Path(str(s.get('model', s))).name)}</code></td>"
                    f"<td><code>{_e(s.get('sha256', ''))}</code></td></tr>"
                    for role, s in sorted(models.items()) if isinstance(s, Mapping))
    parts = [f"<p>{_e(d['paper']) if d['paper'] else 'Method not recognised from the signature.'}</p>",
             f"<p>Format <code>{_e(d['format'] or 'unknown (no OUT.meta.json)')}</code>; generated text in column "
             f"<code>{_e(d['text_column'])}</code>"
             + (f", made from <code>{_e(d['source_column'])}</code>" if d["source_column"] else "") + ".</p>"]
    if mrows:
        parts.append(f"<table><thead><tr><th>role</th><th>model</th><th>fingerprint (SHA-256)</th></tr></thead>"
                     f"<tbody>{mrows}</tbody></table>")
    parts.append(f"<details><summary>Configuration</summary>{_kv_table(sig.get('config') or {})}</details>")
    parts.append(f"<details><summary>Input</summary>{_kv_table(sig.get('input') or {})}</details>")
    parts.append(f"<details><summary>Versions</summary>{_kv_table(sig.get('versions') or {})}</details>")
    return "<section><h2>The run</h2>" + "".join(parts) + "</section>"


def _kpis(d: Mapping[str, Any]) -> str:
    rate = d["kept_rows"] / d["rows"] if d["rows"] else 0.0
    items = [("rows", f"{d['rows']:,}"), ("kept rows", f"{d['kept_rows']:,} ({rate:.1%})"),
             ("discarded rows", f"{d['discarded_rows']:,}"), (f"texts ({d['text_column']})", f"{d['texts']:,}")]
    if d["texts_dropped"]:
        t = d["texts"] + d["texts_dropped"]
        items.append(("texts kept by the filters", f"{d['texts']:,} of {t:,} ({d['texts'] / t:.1%})"))
    if "keep_rate" in d["summary"]:
        items.append(("keep rate (summary)", _fmt(d["summary"]["keep_rate"])))
    return '<div class="kpi">' + "".join(f"<div><b>{_e(v)}</b><span>{_e(k)}</span></div>" for k, v in items) + "</div>"


def _quality_sections(d: Mapping[str, Any]) -> List[str]:
    st = d["length_stats"]
    qw = sorted(d["question_words"].items(), key=lambda kv: (-kv[1], kv[0]))
    n = d["texts"] or 1
    lens = ("<p>" + ", ".join(f"{k} {_fmt(v)}" for k, v in st.items()) + " words (kept)"
            + ("; discarded: mean " + _fmt(d["discarded_length_stats"]["mean"]) if d["discarded_length_stats"] else "")
            + "</p>") if st else ""
    div = {**d["distinct"], "self-BLEU": d["self_bleu"] if d["self_bleu"] is not None else "n/a",
           "unique texts": f"{d['unique_texts']:,} of {d['texts']:,}"}
    out = [f'<section><h2>Lengths and question words</h2><div class="grid"><div>'
           f'{svg_histogram(d["lengths"], "words per generated text", lo=1, integer=True)}{lens}</div><div>'
           f'{svg_bars([(k, 100 * v / n) for k, v in qw[:14]], "first word (% of texts)", unit=" %")}'
           f'<p>{d["with_wh_word"]:,} of {d["texts"]:,} texts ({100 * d["with_wh_word"] / n:.1f} %) hold a wh-word '
           f'anywhere.</p></div></div></section>',
           f'<section><h2>Diversity</h2>{_kv_table(div)}<p class="muted">distinct-n: distinct word n-grams / all '
           f'n-grams (Li et al. 2016); self-BLEU: mean BLEU-4 of each text against the others, on a seeded sample of '
           f'at most 200 (Zhu et al. 2018; lower is more diverse).</p></section>']
    wf = d["wellformed"]
    body = (svg_histogram(wf["values"], "well-formedness probability", lo=0.0, hi=1.0)
            + f"<p>{_e(wf['source'])}; " + ", ".join(f"{k} {_fmt(v)}" for k, v in _describe(wf["values"]).items())
            + "</p>") if "values" in wf else f'<p class="muted">Skipped: {_e(wf["skipped"])}.</p>'
    out.append(f"<section><h2>Well-formedness</h2>{body}</section>")
    if d["scores"]:
        charts = "".join(f"<div>{svg_histogram(v, c)}</div>" for c, v in d["scores"].items())
        out.append(f'<section><h2>Similarity and other scores</h2><div class="grid">{charts}</div></section>')
    return out


def _counts(d: Mapping[str, Any]) -> Dict[str, Any]:
    """The drops, then the rest of the summary (a nested count already among the drops is left out)."""
    out = dict(sorted(d["drops"].items(), key=lambda kv: (-kv[1], kv[0])))
    for k, v in d["summary"].items():
        if k not in out and not (isinstance(v, Mapping) and any(x.startswith(k + ".") for x in out)):
            out[k] = v
    return out


def render_html(d: Mapping[str, Any]) -> str:
    """The report page of :func:`report_data`'s dict: one self-contained HTML document."""
    drops = sorted(d["drops"].items(), key=lambda kv: (-kv[1], kv[0]))
    parts = [_run_section(d),
             f'<section><h2>Keep rate and drops</h2>{_kpis(d)}<div class="grid"><div>'
             f'{svg_bars([(k, v) for k, v in drops if v][:16], "dropped / discarded per reason")}</div><div>'
             f'<details open><summary>Every count of the run</summary>{_kv_table(_counts(d))}</details></div></div>'
             f"</section>"]
    parts += _quality_sections(d)
    parts.append(f"<section><h2>Kept rows</h2>{_rows_table(d['sample_kept'], 'kept', d['text_column'], d['source_column'], d['kept_rows'])}</section>")
    parts.append(f"<section><h2>Discarded rows</h2>{_rows_table(d['sample_discarded'], 'discarded', d['text_column'], d['source_column'], d['discarded_rows'])}</section>")
    title = f"pysynth report: {d['method']} — {d['file']}"
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>"
            f"<header><h1>{_e(title)}</h1><p>{d['rows']:,} rows; samples and self-BLEU drawn with seed "
            f"{_e(d['seed'])}</p></header><main>{''.join(parts)}</main><script>{_JS}</script></body></html>\n")


def write_report(inp: PathLike, out: PathLike, **kw: Any) -> Dict[str, Any]:
    """Write the HTML report of a job's output (see the module doc).

    Parameters
    ----------
    inp : path
        The rows a generating command wrote (``OUT.meta.json`` beside them).
    out : path
        The HTML file (written atomically).
    **kw
        :func:`report_data`'s options (``wellformed``, ``sample``, ``seed``, ``max_scored``, ``field``).

    Returns
    -------
    dict
        ``{"report", "rows", "kept_rows", "discarded_rows", "texts", "distinct-2", "self_bleu", "wellformed"}``.

    Examples
    --------
    >>> write_report("triples.jsonl", "report.html")  # doctest: +SKIP
    """
    from pysynth import io

    if Path(out).is_dir():
        raise ValueError(f"--out: {str(out)!r} is a folder; give an .html file")
    d = report_data(read_run(inp), **kw)
    io.atomic_write_text(out, render_html(d))
    wf = d["wellformed"]
    return {"report": str(out), "rows": d["rows"], "kept_rows": d["kept_rows"], "discarded_rows": d["discarded_rows"],
            "texts": d["texts"], "distinct-2": round(d["distinct"]["distinct-2"], 4),
            "self_bleu": None if d["self_bleu"] is None else round(d["self_bleu"], 4),
            "wellformed": round(statistics.fmean(wf["values"]), 4) if wf.get("values") else wf.get("skipped")}
