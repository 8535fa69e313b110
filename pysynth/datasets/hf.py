"""A pysynth job's output as a Hugging Face ``datasets`` dataset, with a dataset card.

``pysynth export dataset --in OUT --out DIR`` (:func:`export_dataset`) reads the rows and the
signature a generating command wrote (:func:`pysynth.datasets.runs.read_run`), and writes ``DIR``
with ``DatasetDict.save_to_disk``: split ``train`` holds the kept rows and, when the run wrote
discarded rows (rows with a ``reason``), split ``discarded`` holds them, with the same columns.
``datasets.load_from_disk(DIR)`` opens it. Beside the data, ``DIR/README.md`` is the dataset card
(:func:`dataset_card`): the method and its paper, the models with their fingerprints, the
configuration and seed, the input's fingerprint, the counts and the drops per reason, the columns,
and the license and attribution of the inputs; ``DIR/pysynth.meta.json`` is the run's metadata.

``datasets`` is an optional dependency (``pip install ".[datasets]"``), imported on use.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Union

from pysynth.datasets.runs import Run, drop_counts, read_run

__all__ = ["export_dataset", "dataset_card", "to_dataset_dict", "require_datasets"]

PathLike = Union[str, "os.PathLike[str]"]


def require_datasets():
    """The ``datasets`` module, or ImportError saying how to install it."""
    try:
        import datasets
    except ImportError:
        raise ImportError('the Hugging Face export needs the datasets library: pip install ".[datasets]" '
                          "(from the pysynth checkout) or pip install datasets") from None
    return datasets


def _kind(v: Any) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    return type(v).__name__


def _uniform_columns(rows: List[dict]) -> tuple:
    """Rows with every column in every row (None where missing), and the columns whose values mix
    types (e.g. an int id in one row, a str in another), written as JSON text so Arrow can type them."""
    cols: Dict[str, None] = {}
    for r in rows:
        cols.update(dict.fromkeys(r))
    mixed = []
    for c in cols:
        kinds = {_kind(r[c]) for r in rows if r.get(c) is not None}
        if len(kinds) > 1:
            mixed.append(c)
    out = []
    for r in rows:
        row = {c: r.get(c) for c in cols}
        for c in mixed:
            v = row[c]
            row[c] = v if v is None or isinstance(v, str) else json.dumps(v, ensure_ascii=False)
        out.append(row)
    return out, mixed


def to_dataset_dict(run: Run):
    """The run as a ``datasets.DatasetDict``: ``train`` (kept rows) and, when there are any,
    ``discarded`` (rows with a ``reason``); one schema for both. Returns (DatasetDict, mixed
    columns written as JSON text)."""
    ds = require_datasets()
    rows, mixed = _uniform_columns(run.rows)
    if not rows:
        raise ValueError(f"--in: {run.path} holds no rows; nothing to export")
    full = ds.Dataset.from_list(rows)
    kept = [i for i, r in enumerate(run.rows) if not run.is_discarded(r)]
    gone = [i for i, r in enumerate(run.rows) if run.is_discarded(r)]
    splits = {"train": full.select(kept)}
    if gone:
        splits["discarded"] = full.select(gone)
    return ds.DatasetDict(splits), mixed


def _size_category(n: int) -> str:
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")):
        if n < limit:
            return name
    return "1M<n<10M" if n < 10_000_000 else "n>10M"


def _json(v: Any) -> str:
    return json.dumps(v, ensure_ascii=False, sort_keys=True)


def _cell(v: Any) -> str:
    """A markdown table cell: JSON, with the pipes escaped."""
    return "`" + _json(v).replace("|", "\\|").replace("`", "'") + "`"


def dataset_card(run: Run, splits: Mapping[str, int], features: Optional[Mapping[str, str]] = None, *,
                 license: Optional[str] = None, attribution: Optional[str] = None, mixed: tuple = ()) -> str:
    """The ``README.md`` dataset card of an exported run (YAML header for the Hugging Face Hub, then
    markdown): method and paper, models and fingerprints, configuration and seed, input, counts and
    drops per reason, columns, license and attribution.

    Parameters
    ----------
    run : Run
        The job's output (:func:`pysynth.datasets.runs.read_run`).
    splits : mapping of str to int
        Rows per split.
    features : mapping of str to str, optional
        Column -> its ``datasets`` type, as text.
    license, attribution : str, optional
        The inputs' license (a Hub license id, e.g. ``cc-by-sa-4.0``) and attribution; default: those
        of a known bundled input (``KNOWN_INPUTS``), else ``other`` with the method's note.
    mixed : tuple of str
        Columns written as JSON text because their values mixed types.

    Returns
    -------
    str
    """
    m, sig, known = run.method, run.signature, run.input_source()
    lic = license or (known[1] if known else "other")
    attrib = attribution or (known[2] if known else m.inputs)
    total = sum(splits.values())
    L = ["---", f"license: {lic}", "language:", "- en", f"pretty_name: pysynth {m.name} output ({run.path.name})",
         "tags:", "- synthetic", "- pysynth", f"- {m.name.split()[0]}", "task_categories:", f"- {m.task}",
         "size_categories:", f"- {_size_category(total)}", "---", "",
         f"# pysynth `{m.name}`: {run.path.name}", "",
         f"Synthetic data written by `pysynth {m.name}` "
         f"({_version(sig)}) "
         f"and exported by `pysynth export dataset`. Load it with:", "",
         "```python", "from datasets import load_from_disk", "", 'ds = load_from_disk("PATH/TO/THIS/FOLDER")',
         "```", "", "## Method", ""]
    L += [f"- method: `pysynth {m.name}`" + (f", following {m.paper} ({m.url})" if m.paper else "")
          + (" (recognised from the columns: the rows came without OUT.meta.json)" if m.guessed else ""),
          f"- output format: `{run.format or 'unknown (no OUT.meta.json beside the rows)'}`"
          + (f", version {sig['format_version']}" if "format_version" in sig else ""),
          f"- generated text: column `{m.text}`" + (f", made from column `{m.source}`" if m.source else ""), ""]
    L += _models_section(sig) + _config_section(sig) + _input_section(sig, known)
    L += _counts_section(run, splits) + _columns_section(features or {}, mixed)
    L += ["## License and attribution", "", f"- license of the inputs: `{lic}`; this derived data is shared under "
          "the same terms (share-alike licenses require it).", f"- attribution: {attrib}",
          "- generated by pysynth's shipped or given models; check the outputs before training on them (the card's "
          "counts say how many were dropped and why).", ""]
    L += ["## Signature", "", "The run's signature (`OUT.meta.json`; equal signatures mean equal bytes):", "",
          "```json", json.dumps(sig, ensure_ascii=False, indent=1, sort_keys=True), "```", ""]
    return "\n".join(L)


def _version(sig: Mapping[str, Any]) -> str:
    v = (sig.get("versions") or {}).get("pysynth")
    return f"pysynth {v}" if v else "pysynth version not recorded"


def _models_section(sig: Mapping[str, Any]) -> List[str]:
    models = sig.get("models") or {}
    L = ["## Models", ""]
    if not models:
        return L + ["No trained model is named in the signature (the method's configuration below says what made "
                    "the rows).", ""]
    L += ["| role | model | fingerprint (SHA-256) |", "|---|---|---|"]
    for role, spec in sorted(models.items()):
        spec = spec if isinstance(spec, Mapping) else {"model": spec}
        name = str(spec.get("model", "?"))
        name = Path(name).name if os.sep in name else name  # a folder of the shipped models: its name
        L.append(f"| {role} | `{name}` | `{spec.get('sha256', spec.get('fingerprint', '?'))}` |")
    return L + [""]


def _config_section(sig: Mapping[str, Any]) -> List[str]:
    cfg = sig.get("config") or {}
    L = ["## Configuration", ""]
    if not cfg:
        return L + ["Not recorded (no `OUT.meta.json` beside the rows).", ""]
    seed = cfg.get("seed")
    L += [f"- seed: `{seed}`" if seed is not None else "- seed: none recorded (the method is deterministic)", "",
          "| option | value |", "|---|---|"]
    L += [f"| `{k}` | {_cell(v)} |" for k, v in sorted(cfg.items())]
    return L + [""]


def _input_section(sig: Mapping[str, Any], known) -> List[str]:
    inp = sig.get("input") or {}
    L = ["## Input", ""]
    if known:
        L.append(f"- {known[0]}")
    L += [f"- `{k}`: {_cell(v)}" for k, v in sorted(inp.items())] or ["- not recorded"]
    return L + [""]


def _counts_section(run: Run, splits: Mapping[str, int]) -> List[str]:
    L = ["## Counts", "", "| split | rows |", "|---|---|"] + [f"| `{s}` | {n:,} |" for s, n in splits.items()]
    drops = drop_counts(run)
    L += ["", "Dropped, discarded or rejected items per reason:", ""]
    if drops:
        L += ["| reason | count |", "|---|---|"] + [f"| `{k}` | {v:,} |" for k, v in drops.items()]
    else:
        L.append("none recorded")
    other = {k: v for k, v in run.summary.items() if k not in drops and not isinstance(v, Mapping)}
    if other:
        L += ["", "The run's summary:", "", "| count | value |", "|---|---|"]
        L += [f"| `{k}` | {_cell(v)} |" for k, v in sorted(other.items())]
    return L + [""]


def _columns_section(features: Mapping[str, str], mixed) -> List[str]:
    if not features:
        return []
    L = ["## Columns", "", "| column | type |", "|---|---|"] + [f"| `{c}` | `{t}` |" for c, t in features.items()]
    if mixed:
        L += ["", "Columns written as JSON text (their values mixed types): " + ", ".join(f"`{c}`" for c in mixed)]
    return L + [""]


def _check_out(out: Path) -> None:
    if not out.exists():
        return
    if not out.is_dir():
        raise ValueError(f"--out: {str(out)!r} exists and is not a folder; give a new folder")
    earlier = (out / "dataset_dict.json").is_file() or (out / "dataset_info.json").is_file()
    if any(out.iterdir()) and not earlier:
        raise ValueError(f"--out: {str(out)!r} is a non-empty folder that holds no exported dataset; "
                         "give a new folder (an earlier export there would be replaced)")


def export_dataset(inp: PathLike, out: PathLike, *, license: Optional[str] = None,
                   attribution: Optional[str] = None, progress: bool = True) -> Dict[str, Any]:
    """Write a job's output as a Hugging Face dataset folder with a dataset card.

    Parameters
    ----------
    inp : path
        The rows a generating command wrote (JSON Lines or Parquet, ``OUT.meta.json`` beside them).
    out : path
        The dataset folder to write (built beside it and swapped in atomically): new, empty, or an
        earlier export (replaced); never a folder holding other files.
    license, attribution : str, optional
        The inputs' license and attribution for the card (see :func:`dataset_card`).
    progress : bool
        Show the ``datasets`` library's progress bars while saving.

    Returns
    -------
    dict
        ``{"dataset_dir", "splits": {split: rows}, "format", "card"}``.

    Examples
    --------
    >>> export_dataset("triples.jsonl", "triples_hf")  # doctest: +SKIP
    {'dataset_dir': 'triples_hf', 'splits': {'train': 9, 'discarded': 10}, 'format': 'pysynth.qagen', ...}
    >>> import datasets; datasets.load_from_disk("triples_hf")["train"][0]["question"]  # doctest: +SKIP
    """
    from pysynth import io

    ds = require_datasets()
    out = Path(out)
    _check_out(out)
    run = read_run(inp)
    dd, mixed = to_dataset_dict(run)
    splits = {name: d.num_rows for name, d in dd.items()}
    features = {c: str(t) for c, t in dd["train"].features.items()}
    card = dataset_card(run, splits, features, license=license, attribution=attribution, mixed=tuple(mixed))
    bars = ds.is_progress_bar_enabled()
    if not progress:
        ds.disable_progress_bars()
    try:
        with io.atomic_dir(out) as tmp:
            # an empty split needs one (empty) shard: with none, load_from_disk fails
            dd.save_to_disk(str(tmp), num_shards={k: 1 for k, n in splits.items() if n == 0})
            _write_beside(tmp, card, run.meta)
    finally:
        if bars and not progress:
            ds.enable_progress_bars()
    return {"dataset_dir": str(out), "splits": splits, "format": run.format, "card": str(out / "README.md")}


def _write_beside(tmp: Path, card: str, meta: Optional[Mapping[str, Any]]) -> None:
    (tmp / "README.md").write_text(card, encoding="utf-8")
    if meta is not None:
        (tmp / "pysynth.meta.json").write_text(json.dumps(meta, ensure_ascii=False, indent=1, sort_keys=True) + "\n",
                                               encoding="utf-8")
