"""Turn pytest-benchmark JSON from bench/bench_metrics.py into the ratio tables of RESULTS.md.

Usage (from the repository root)::

    python bench/report.py RUN1.json [RUN2.json ...] [--pick-quietest] [--rayon2 R2.json]
                           [--ranking RANK.json] [--notes bench/results_notes.md] [-o bench/RESULTS.md]

RUN1.json is the reported run (with --pick-quietest: the run during which other processes
used the least CPU); the other runs feed the run-to-run variance table.
--rayon2: a run with RAYON_NUM_THREADS=2 (the Rust tools on both cores).
--ranking: a pytest-benchmark JSON of bench/bench_ranking.py.
--notes: markdown appended verbatim as "Notes" (default: bench/results_notes.md if it exists).
Without -o the markdown goes to stdout. With -o, the "## Paper check (MQR Table 6)" section
of the existing file is kept as it is (someone else fills it in).

Throughput = items per round / best round (minimum) time; the median is shown beside it.
Speedup = pysynth throughput / competitor throughput, so subsets (rouge-score, the sacrebleu
sentence loops) compare per pair / per sentence.
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PAPER_HEADING = "## Paper check (MQR Table 6)"
PAPER_PLACEHOLDER = "(filled in by the metrics owner)"

GROUPS = [
    ("rouge-short", "ROUGE-1/2/L, 100k question-length pairs (no stemmer)", "pairs"),
    ("rouge-short-synthetic", "ROUGE-1/2/L, 100k synthetic question-length pairs (second row)", "pairs"),
    ("rouge-short-stem", "ROUGE-1/2/L with the Porter stemmer, 100k question-length pairs", "pairs"),
    ("rouge-long", "ROUGE-1/2/L, 10k pairs of 100-300 tokens", "pairs"),
    ("bleu-corpus", "Corpus BLEU-4, sacrebleu flavor (13a), 100k sentences", "sentences"),
    ("bleu-corpus-nltk", "Corpus BLEU-4, nltk flavor (whitespace tokens), 100k sentences", "sentences"),
    ("bleu-corpus-coco", "Corpus BLEU-1..4, pycocoevalcap flavor, 100k sentences", "sentences"),
    ("bleu-sentence", "Sentence BLEU (sacrebleu defaults) of each of 100k pairs", "sentences"),
]


# --------------------------------------------------------------------------- loading


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def rows(run):
    out = {}
    for b in run["benchmarks"]:
        ei = b.get("extra_info", {})
        st = b["stats"]
        items = ei.get("items")
        out[b["name"]] = {
            "name": b["name"],
            "group": b.get("group"),
            "param": b.get("param") or (b.get("params") or {}).get("tool"),
            "tool": ei.get("tool", b["name"]),
            "workers": ei.get("workers"),
            "threads": ei.get("threads"),
            "items": items,
            "unit": ei.get("unit", "items"),
            "subset": ei.get("subset"),
            "agreement": ei.get("agreement"),
            "other_load": ei.get("other_load_cores"),
            "rounds": st["rounds"],
            "min": st["min"],
            "median": st["median"],
            "stddev": st.get("stddev", 0.0),
            "tput": items / st["min"] if items else None,
            "tput_med": items / st["median"] if items else None,
        }
    return out


def fmt_rate(x):
    if x is None:
        return "-"
    if x >= 1e6:
        return f"{x / 1e6:.2f} M"
    if x >= 1e3:
        return f"{x / 1e3:.1f} k"
    return f"{x:.0f}"


def fmt_s(x):
    if x >= 1:
        return f"{x:.2f} s"
    return f"{x * 1e3:.1f} ms"


def fmt_x(x):
    if x is None:
        return "-"
    if x >= 100:
        return f"{x:.0f}x"
    if x >= 10:
        return f"{x:.1f}x"
    return f"{x:.2f}x"


def fmt_agree(a):
    if a is None:
        return ""
    if isinstance(a, dict):
        return "; ".join(f"{k}: {v}" for k, v in a.items())
    return str(a)


def label(r):
    tool = r["tool"]
    if tool == "pysynth":
        return f"pysynth workers={r['workers']}"
    if r.get("threads"):
        return f"{tool} ({r['threads']} thread{'s' if r['threads'] != 1 else ''})"
    return tool


def machine_line(run):
    mi = run.get("machine_info", {})
    cpu = mi.get("cpu_model") or (mi.get("cpu") or {}).get("brand_raw", "?")
    return (f"`nproc` = {mi.get('nproc', '?')}, CPU: {cpu}, Python {mi.get('python_version_full') or mi.get('python_version')}, "
            f"{mi.get('system', '')} {mi.get('release', '')}".strip())


def date_of(run):
    return (run.get("datetime") or "?")[:19].replace("T", " ") + " UTC"


# ---------------------------------------------------------------------------- tables


def group_rows(R, group):
    return [r for r in R.values() if r["group"] == group]


def pysynth_of(rs, workers):
    for r in rs:
        if r["tool"] == "pysynth" and r["workers"] == workers:
            return r
    return None


def group_table(R, group, unit):
    rs = group_rows(R, group)
    if not rs:
        return None
    p1, p2 = pysynth_of(rs, 1), pysynth_of(rs, 2)
    rs.sort(key=lambda r: (r["tool"] != "pysynth", -(r["tput"] or 0)))
    lines = [
        f"| tool | {unit} per round | rounds | best | median | {unit}/s (best) | {unit}/s (median) "
        f"| pysynth w=1 speedup | pysynth w=2 speedup | other load | scores vs reference |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rs:
        s1 = p1["tput"] / r["tput"] if p1 and r["tput"] else None
        s2 = p2["tput"] / r["tput"] if p2 and r["tput"] else None
        items = f"{r['items']:,}" + (" (subset)" if r.get("subset") else "")
        lines.append(
            f"| {label(r)} | {items} | {r['rounds']} | {fmt_s(r['min'])} | {fmt_s(r['median'])} | "
            f"{fmt_rate(r['tput'])} | {fmt_rate(r['tput_med'])} | {fmt_x(s1)} | {fmt_x(s2)} | "
            f"{'-' if r['other_load'] is None else format(r['other_load'], '.2f')} | {fmt_agree(r['agreement'])} |"
        )
    return "\n".join(lines)


def find(R, group, tool=None, workers=None, startswith=None):
    for r in R.values():
        if r["group"] != group:
            continue
        if tool is not None and r["tool"] != tool:
            continue
        if startswith is not None and not r["tool"].startswith(startswith):
            continue
        if workers is not None and r["workers"] != workers:
            continue
        return r
    return None


def ratio(a, b):
    if a is None or b is None or not a["tput"] or not b["tput"]:
        return None
    return a["tput"] / b["tput"]


def targets(R, informational=False):
    """(target, measured, met, value) rows; informational adds ratios that have no target."""
    out = []

    def add(desc, value, need, shown):
        met = None if (value is None or need is None) else value >= need
        out.append((desc, shown if value is not None else "not measured", met, value))

    p = find(R, "rouge-short", "pysynth", 1)
    add("ROUGE-1/2/L, 100k short pairs: >= 2M pairs/s per core (pysynth workers=1)",
        p and p["tput"], 2e6, p and f"{fmt_rate(p['tput'])} pairs/s")
    v = ratio(p, find(R, "rouge-short", "rouge-rust"))
    add("... >= 4x rouge-rust (1 thread each)", v, 4, fmt_x(v))
    v = ratio(p, find(R, "rouge-short", "rouge-score"))
    add("... >= 100x rouge-score", v, 100, fmt_x(v))
    v = ratio(find(R, "rouge-long", "pysynth", 1), find(R, "rouge-long", "rouge-score-rs"))
    add("ROUGE, 10k pairs of 100-300 tokens: >= 2x rouge-score-rs (1 thread each)", v, 2, fmt_x(v))
    v = ratio(find(R, "bleu-corpus", "pysynth", 1), find(R, "bleu-corpus", "sacrebleu"))
    add("Corpus BLEU-4, 100k sentences: >= 50x sacrebleu (13a)", v, 50, fmt_x(v))
    ps = find(R, "bleu-sentence", "pysynth", 1)
    fast = find(R, "bleu-sentence", "sacrebleu BLEU.sentence_score loop")
    conv = find(R, "bleu-sentence", "sacrebleu.sentence_bleu loop")
    v = ratio(ps, fast)
    add("Sentence BLEU: >= 25x sacrebleu (vs the faster BLEU.sentence_score loop)", v, 25, fmt_x(v))
    v = ratio(ps, conv)
    add("... (vs the sacrebleu.sentence_bleu() loop)", v, 25, fmt_x(v))
    for g, what in (("rouge-short", "ROUGE short"), ("rouge-long", "ROUGE long"), ("bleu-corpus", "corpus BLEU"),
                    ("bleu-corpus-nltk", "corpus BLEU nltk"), ("bleu-sentence", "sentence BLEU")):
        v = ratio(find(R, g, "pysynth", 2), find(R, g, "pysynth", 1))
        add(f"Scaling workers=2 vs 1 on 2 cores, {what}: >= 1.7x", v, 1.7, fmt_x(v))
    if informational:
        for g, tool, desc in (
            ("rouge-short", "rouge-score-rs", "ROUGE short vs rouge-score-rs (1 thread)"),
            ("rouge-short-synthetic", "rouge-rust", "ROUGE short, synthetic text, vs rouge-rust (1 thread)"),
            ("rouge-short-stem", "rouge-score", "ROUGE short, stemmer, vs rouge-score"),
            ("rouge-short-stem", "rouge-score-rs", "ROUGE short, stemmer, vs rouge-score-rs (1 thread)"),
            ("rouge-long", "rouge-rust", "ROUGE long vs rouge-rust (1 thread)"),
            ("rouge-long", "rouge-score", "ROUGE long vs rouge-score"),
            ("bleu-corpus-nltk", "nltk", "Corpus BLEU, nltk flavor, vs nltk corpus_bleu"),
            ("bleu-corpus-coco", "pycocoevalcap", "Corpus BLEU, coco flavor, vs pycocoevalcap Bleu(4)"),
        ):
            v = ratio(find(R, g, "pysynth", 1), find(R, g, tool))
            add(f"(no target) {desc}", v, None, fmt_x(v))
    return out


def _verdict(met):
    return "-" if met is None else ("**met**" if met else "**not met**")


def targets_table(R, all_runs=None):
    """Targets in the reported run; with all_runs (list of rows()), also their range over the runs."""
    if not all_runs or len(all_runs) < 2:
        lines = ["| target | measured | met? |", "|---|---:|---|"]
        for desc, shown, met, _ in targets(R):
            lines.append(f"| {desc} | {shown} | {_verdict(met)} |")
        return "\n".join(lines)
    per_run = [targets(x, True) for x in all_runs]
    n = len(all_runs)
    lines = [f"| target | reported run | met? | range over {n} runs | met in |", "|---|---:|---|---:|---:|"]
    for i, (desc, shown, met, value) in enumerate(targets(R, True)):
        vals = [pr[i][3] for pr in per_run if pr[i][3] is not None]
        mets = [pr[i][2] for pr in per_run if pr[i][2] is not None]
        if vals:
            is_rate = "pairs/s" in shown
            f = (lambda v: fmt_rate(v)) if is_rate else fmt_x
            rng = f"{f(min(vals))} - {f(max(vals))}"
        else:
            rng = "-"
        met_in = f"{sum(mets)} of {len(mets)}" if mets else "-"
        lines.append(f"| {desc} | {shown} | {_verdict(met)} | {rng} | {met_in} |")
    return "\n".join(lines)


def scaling_table(R):
    lines = ["| operation | workers=1 | workers=2 | speedup (best) | speedup (median) |", "|---|---:|---:|---:|---:|"]
    for g, title, unit in GROUPS:
        a, b = find(R, g, "pysynth", 1), find(R, g, "pysynth", 2)
        if a and b:
            lines.append(f"| {g} | {fmt_rate(a['tput'])} {unit}/s | {fmt_rate(b['tput'])} {unit}/s | "
                         f"{fmt_x(b['tput'] / a['tput'])} | {fmt_x(b['tput_med'] / a['tput_med'])} |")
    return "\n".join(lines)


def rayon2_table(R, R2):
    lines = ["| group | competitor (2 threads) | its pairs/s | pysynth workers=2 pairs/s (same run) | speedup |",
             "|---|---|---:|---:|---:|"]
    for g in ("rouge-short", "rouge-short-stem", "rouge-long"):
        p2 = find(R2, g, "pysynth", 2)
        for tool in ("rouge-rust", "rouge-score-rs"):
            c = find(R2, g, tool)
            if c and p2:
                lines.append(f"| {g} | {label(c)} | {fmt_rate(c['tput'])} | {fmt_rate(p2['tput'])} | {fmt_x(ratio(p2, c))} |")
    return "\n".join(lines)


def variance_table(runs):
    Rs = [rows(r) for r in runs]
    names = [n for n in Rs[0]]
    head = "| benchmark | " + " | ".join(f"run {i + 1} (best, {{unit}}/s)".replace("{unit}", "items") for i in range(len(Rs)))
    head += " | spread between runs | median/best in run 1 | other load (cores) per run |"
    lines = [head, "|---|" + "---:|" * len(Rs) + "---:|---:|---|"]
    for n in names:
        vals = [R.get(n) for R in Rs]
        tp = [v["tput"] for v in vals if v and v["tput"]]
        spread = (max(tp) / min(tp) - 1) * 100 if len(tp) > 1 else 0.0
        r1 = vals[0]
        loads = ", ".join("-" if (v is None or v["other_load"] is None) else f"{v['other_load']:.2f}" for v in vals)
        lines.append(
            f"| {n} | " + " | ".join(fmt_rate(v["tput"]) if v else "-" for v in vals)
            + f" | {spread:.0f}% | {r1['min'] and r1['median'] / r1['min']:.2f} | {loads} |"
        )
    return "\n".join(lines)


def ranking_section(run):
    out = []
    groups = {}
    for b in run["benchmarks"]:
        groups.setdefault(b.get("group"), []).append(b)
    for g, bs in groups.items():
        bs.sort(key=lambda b: b["stats"]["min"])
        base = next((b for b in bs if (b.get("params") or {}).get("impl") == "cpp"), bs[0])
        out.append(f"### {g}\n")
        out.append("| benchmark | rounds | best | median | time / cpp (best) |")
        out.append("|---|---:|---:|---:|---:|")
        for b in bs:
            st = b["stats"]
            out.append(f"| {b['name']} | {st['rounds']} | {fmt_s(st['min'])} | {fmt_s(st['median'])} | "
                       f"{st['min'] / base['stats']['min']:.2f} |")
        out.append("")
    return "\n".join(out)


# ---------------------------------------------------------------------------- output


def existing_paper_section(path: Path):
    if not path.exists():
        return None
    text = path.read_text(encoding="utf-8")
    i = text.find(PAPER_HEADING)
    if i < 0:
        return None
    m = re.search(r"^## ", text[i + len(PAPER_HEADING):], flags=re.M)
    end = i + len(PAPER_HEADING) + m.start() if m else len(text)
    return text[i:end].rstrip() + "\n"


def core_hash(run):
    return (run.get("machine_info", {}).get("pysynth_core") or {}).get("sha256_16")


def mean_other_load(run):
    v = [b.get("extra_info", {}).get("other_load_cores") for b in run["benchmarks"]]
    v = [x for x in v if x is not None]
    return statistics.fmean(v) if v else float("inf")


def build_note(other, main):
    h, m = core_hash(other), core_hash(main)
    if h is None:
        return ""
    note = f" — `pysynth._core` sha256 `{h}...`"
    if m is not None and h != m:
        note += " (**another build than the runs above**: compare within this table only)"
    return note


def render(runs, rayon2=None, ranking=None, notes=None, paper=None):
    run = runs[0]
    R = rows(run)
    mi = run.get("machine_info", {})
    cmd = run.get("command", "python -m pytest bench/bench_metrics.py --benchmark-only --benchmark-json=...")
    env = {k: v for k, v in (run.get("env") or {}).items() if v}
    env_s = " ".join(f"{k}={v}" for k, v in env.items())
    cmd_full = (env_s + " " + cmd).strip()
    versions = mi.get("package_versions") or {}
    ver_s = ", ".join(f"{k} {v}" for k, v in versions.items() if v)
    missing = [k for k, v in versions.items() if v is None]
    run_line = f"Command: `{cmd_full}` — machine: {machine_line(run)} — date: {date_of(run)}"

    o = []
    o.append("# Metrics stage: speed vs the reference tools\n")
    o.append("Generated by `bench/report.py` from pytest-benchmark JSON (see bench/README.md to regenerate). "
             "Every competitor is measured in the same run as pysynth, on the same data.\n")
    o.append("## Setup\n")
    o.append(f"- Command: `{cmd_full}`")
    o.append(f"- Machine: {machine_line(run)}")
    o.append(f"- Date: {date_of(run)}")
    git = mi.get("git") or {}
    core = mi.get("pysynth_core") or {}
    if git or core:
        o.append(f"- Code: git commit `{(git.get('commit') or '?')[:12]}` ({git.get('dirty_files', '?')} files changed "
                 f"in the work tree), `pysynth._core` sha256 `{core.get('sha256_16', '?')}...`; every run below used "
                 "this same build")
    impl = mi.get("pysynth_metrics_impl")
    o.append(f"- Packages: {ver_s}" + (f"; pysynth metrics backend: `{impl}`" if impl else ""))
    if missing:
        o.append(f"- Not installed (skipped): {', '.join(missing)}")
    o.append(f"- Data: {mi.get('data_source', '?')} text (bench/_data.py): *short* = 100,000 random pairs of "
             "question-length strings (5-15 tokens; 200,000 distinct strings: ~70k unique real questions from "
             "VQA v2, query-wellformedness, MQR, ComQA, SQuAD, topped up with word-level edits of them); *long* = "
             "10,000 pairs of 100-300 token windows of SQuAD 2.0 dev contexts.")
    o.append("- Method: `benchmark.pedantic`, one call per round; pysynth 15 rounds (+1 warm-up), the Rust tools 10 "
             "(+1), the pure-Python tools 3 (after one untimed reference run). Throughput uses the best round; the "
             "median is shown beside it. Subsets: rouge-score runs on the first 10,000 short / 500 long pairs and "
             "the sacrebleu sentence loops on the first 10,000 pairs; ratios are per pair / per sentence.")
    o.append(f"- Rust tools ran with RAYON_NUM_THREADS={mi.get('rayon_num_threads')} (their batch APIs otherwise use "
             "every core); load average at start {}.".format(
                 ", ".join(f"{x:.2f}" for x in (mi.get("loadavg_at_start") or [])) or "?"))
    o.append("- 'other load' = CPU (in cores, out of `nproc`) that *other* processes used while that benchmark ran, "
             "from /proc/stat minus this process's own CPU time; 0 means the machine was otherwise idle.")
    o.append("- Scores are checked before timing: pysynth == rouge-score / sacrebleu / nltk / pycocoevalcap exactly "
             "(asserted); agreement of the Rust tools is recorded in the last column.\n")

    o.append("## Targets\n")
    o.append(targets_table(R, [rows(r) for r in runs]) + "\n")
    if len(runs) > 1:
        o.append(f"'reported run' = run 1 below; 'range' and 'met in' cover all {len(runs)} runs of the same command "
                 "(see Run-to-run variance).\n")

    for g, title, unit in GROUPS:
        t = group_table(R, g, unit)
        if t is None:
            continue
        o.append(f"## {g}: {title}\n")
        o.append(run_line + "\n")
        o.append(t + "\n")

    o.append("## Scaling: workers=2 vs workers=1 (pysynth)\n")
    o.append(run_line + "\n")
    o.append(scaling_table(R) + "\n")

    if rayon2 is not None:
        R2 = rows(rayon2)
        env2 = " ".join(f"{k}={v}" for k, v in (rayon2.get("env") or {}).items() if v)
        o.append("## All cores: pysynth workers=2 vs the Rust tools on 2 threads\n")
        o.append(f"Command: `{(env2 + ' ' + rayon2.get('command', '')).strip()}` — machine: {machine_line(rayon2)} — "
                 f"date: {date_of(rayon2)}{build_note(rayon2, run)}\n")
        o.append(rayon2_table(R, R2) + "\n")

    if len(runs) > 1:
        o.append("## Run-to-run variance\n")
        o.append("The same command run {} times; run 1 is the one reported above (the quietest when --pick-quietest is "
                 "given). 'other load' = CPU used by other "
                 "processes on this shared machine while the benchmark ran (2 = both cores busy).\n".format(len(runs)))
        for i, r in enumerate(runs):
            o.append(f"- run {i + 1}: {date_of(r)}, mean other load {mean_other_load(r):.2f} cores, load average "
                     "at start " + ", ".join(f"{x:.2f}" for x in (r.get("machine_info", {}).get("loadavg_at_start") or [])))
        o.append("")
        o.append(variance_table(runs) + "\n")

    if ranking is not None:
        o.append("## Ranking stage (bench/bench_ranking.py)\n")
        o.append(f"Command: `{ranking.get('command', 'python -m pytest bench/bench_ranking.py --benchmark-only')}` — "
                 f"machine: {machine_line(ranking)} — date: {date_of(ranking)}{build_note(ranking, run)}\n")
        o.append("Workload (from that file): 100,000 queries x 20 candidates (2M scored pairs). Backends: compiled "
                 "(`cpp`), the pure-Python twin (`python`, 1 round) and a vectorized NumPy baseline.\n")
        o.append(ranking_section(ranking))

    if notes:
        o.append("## Notes\n")
        o.append(notes.strip() + "\n")

    o.append(paper.rstrip() + "\n" if paper else f"{PAPER_HEADING}\n\n{PAPER_PLACEHOLDER}\n")
    return "\n".join(o)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", help="bench_metrics JSON files; the first is reported (see --pick-quietest)")
    ap.add_argument("--rayon2", help="bench_metrics JSON run with RAYON_NUM_THREADS=2")
    ap.add_argument("--ranking", help="bench_ranking JSON")
    ap.add_argument("--notes", help="markdown file appended as Notes (default bench/results_notes.md if present)")
    ap.add_argument("--pick-quietest", action="store_true",
                    help="report the run with the least CPU used by other processes (mean other_load_cores)")
    ap.add_argument("-o", "--output", help="write here (keeps its Paper check section) instead of stdout")
    a = ap.parse_args(argv)
    runs = [load(p) for p in a.runs]
    for p, r in zip(a.runs, runs):
        r.setdefault("_file", p)
    # only runs of the same compiled code are comparable: keep those whose extension
    # fingerprint equals that of the newest run (runs without a fingerprint are dropped
    # when any run has one)
    newest = max(runs, key=lambda r: r.get("datetime", ""))
    want = core_hash(newest)
    if want is not None:
        dropped = [r["_file"] for r in runs if core_hash(r) != want]
        runs = [r for r in runs if core_hash(r) == want]
        for f in dropped:
            print(f"report.py: leaving out {f}: other pysynth._core build than the newest run", file=sys.stderr)
    for r in runs:
        if r.get("pysynth_core_changed_during_run"):
            print(f"report.py: warning: {r['_file']}: the extension was rebuilt on disk during the run", file=sys.stderr)
    if a.pick_quietest:
        runs.sort(key=mean_other_load)
    notes_path = Path(a.notes) if a.notes else HERE / "results_notes.md"
    notes = notes_path.read_text(encoding="utf-8") if notes_path.exists() else None
    paper = existing_paper_section(Path(a.output)) if a.output else None
    text = render(runs, load(a.rayon2) if a.rayon2 else None, load(a.ranking) if a.ranking else None, notes, paper)
    if a.output:
        Path(a.output).write_text(text, encoding="utf-8")
    else:
        print(text)


if __name__ == "__main__":
    main()
