"""The output of a pysynth job, read back: its rows, its signature and what each method made.

Every generating command writes its rows (JSON Lines or Parquet) and, beside them,
``OUT.meta.json``: the run's signature (:mod:`pysynth.signature`: format, configuration, input
fingerprint, models, versions) and its summary (the counts, drops among them).  :func:`read_run`
reads both back into a :class:`Run`, which knows from the signature's format which method made
the rows, its paper, which column holds the generated text and which the text it was made from,
and which rows were discarded (a row with a ``reason``).  The Hugging Face export
(:mod:`pysynth.datasets.hf`) and the quality report (:mod:`pysynth.quality.report`) read runs
through it.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

__all__ = ["Method", "METHODS", "KNOWN_INPUTS", "Run", "read_run", "method_of", "drop_counts", "texts_of"]

PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class Method:
    """What a pysynth method makes, for the dataset card and the report.

    Attributes
    ----------
    name : str
        The command that writes the format (``qagen generate``).
    paper : str
        The paper the method follows (authors, year, title, venue).
    url : str
        Where the paper is.
    text : str
        The column holding the generated text (a str, or a list of str).
    source : str
        The column holding the text it was made from.
    task : str
        The Hugging Face task category of the data.
    inputs : str
        What the input usually is and its license, when the run's input is not a known file.
    guessed : bool
        Recognised from the columns (the rows came without a signature).
    """

    name: str
    paper: str
    url: str
    text: str
    source: str
    task: str = "text2text-generation"
    inputs: str = "rows given by the user; their license is theirs (pass --license / --attribution)"
    guessed: bool = False


_STACK = ("Stack Exchange user contributions, licensed CC BY-SA (2.5, 3.0 or 4.0 by the post's date; "
          "https://stackoverflow.com/help/licensing); attribute each row to its site and post")

#: signature format -> the method that writes it (the formats of ``OUT.meta.json``)
METHODS: Dict[str, Method] = {
    "pysynth.k2q.synthetic": Method(
        "k2q synthesize", "Heng Ding and Krisztian Balog. 2018. Generating Synthetic Data for Neural "
        "Keyword-to-Question Models. ICTIR 2018", "https://arxiv.org/abs/1807.05324",
        text="keywords", source="question"),
    "pysynth.k2q.generate": Method(
        "k2q generate", "Heng Ding and Krisztian Balog. 2018. Generating Synthetic Data for Neural "
        "Keyword-to-Question Models. ICTIR 2018", "https://arxiv.org/abs/1807.05324",
        text="questions", source="keywords"),
    "pysynth.qagen": Method(
        "qagen generate", "Chris Alberti, Daniel Andor, Emily Pitler, Jacob Devlin and Michael Collins. 2019. "
        "Synthetic QA Corpora Generation with Roundtrip Consistency. ACL 2019", "https://aclanthology.org/P19-1620",
        text="question", source="context", task="question-answering",
        inputs="paragraphs given by the user (SQuAD and Wikipedia paragraphs: CC BY-SA 4.0)"),
    "pysynth.paraphrase": Method(
        "paraphrase generate", "Jason L. Granstedt. 2017. Data Augmentation with Seq2Seq Models. MS thesis, "
        "Virginia Tech", "https://vtechworks.lib.vt.edu/handle/10919/78315", text="paraphrases", source="question"),
    "pysynth.mqr.rewrite": Method(
        "mqr rewrite", "Zewei Chu, Mingda Chen, Jing Chen, Miaosen Wang, Kevin Gimpel, Manaal Faruqui and Xiance Si. "
        "2020. How to Ask Better Questions? A Large-Scale Multi-Domain Dataset for Rewriting Ill-Formed Questions. "
        "AAAI 2020", "https://arxiv.org/abs/1911.09247", text="rewrite", source="question"),
    "pysynth.dup.pairs": Method(
        "dup pairs", "Andreas Rücklé, Nafise Sadat Moosavi and Iryna Gurevych. 2019. Neural Duplicate Question "
        "Detection without Labeled Training Data. EMNLP 2019", "https://aclanthology.org/D19-1171",
        text="body", source="title", task="text-classification", inputs=_STACK),
}

#: input fingerprints (``input.sha256`` of a signature) of the bundled files -> (what, license, attribution)
KNOWN_INPUTS: Dict[str, Tuple[str, str, str]] = {
    "b887e3b1e77c58bae1053c986a0c8b3fd120840fdb450831ff1fd7d268ffbc8b": (
        "the bundled 22,116 demo questions (pysynth/data/k2q_demo.jsonl.gz)", "cc-by-sa-4.0",
        "Google query-wellformedness (Faruqui & Das 2018, CC BY-SA 4.0); MQR (Chu et al. 2020; Stack Exchange "
        "user contributions, CC BY-SA 4.0); SQuAD 2.0 dev questions (Rajpurkar et al. 2018, CC BY-SA 4.0)"),
    "641b23ae22ba29905411df2e1627c5e436d6f7e876c2d848f8463cbe03b55081": (
        "the bundled SQuAD 2.0 dev sample (pysynth/data/qagen_sample.json.gz)", "cc-by-sa-4.0",
        "SQuAD 2.0 (Rajpurkar, Jia and Liang, ACL 2018), paragraphs of the Wikipedia articles Oxygen and "
        "Amazon_rainforest (CC BY-SA 4.0)"),
}

#: the first columns found name the generated text and its source when the format is unknown
_TEXT_GUESS = ("questions", "paraphrases", "rewrite", "question", "keywords", "text", "title")
_SOURCE_GUESS = ("keywords", "question", "context", "body", "text")
#: summary keys that count dropped or discarded items
_DROP = re.compile(r"drop|discard|reject|below|mismatch|without|^no_|not_|skipped|reasons?$|pivot_rules")


@dataclass
class Run:
    """A job's output read back (:func:`read_run`).

    Attributes
    ----------
    path : Path
        The rows file.
    rows : list of dict
        Every row, in file order.
    meta : dict or None
        ``OUT.meta.json`` (or the Parquet file's ``pysynth`` metadata); None when there is none.
    """

    path: Path
    rows: List[dict]
    meta: Optional[Dict[str, Any]] = None
    _method: Optional[Method] = field(default=None, repr=False)

    @property
    def format(self) -> Optional[str]:
        return (self.meta or {}).get("format")

    @property
    def signature(self) -> Dict[str, Any]:
        """The signature part of the metadata (format, configuration, input, models, versions)."""
        keep = ("format", "format_version", "config", "input", "models", "versions")
        return {k: self.meta[k] for k in keep if self.meta and k in self.meta}

    @property
    def summary(self) -> Dict[str, Any]:
        """The run's counts: ``summary`` (row stages) or ``rows`` (k2q synthesize) of the metadata."""
        m = self.meta or {}
        s = m.get("summary", m.get("rows"))
        return dict(s) if isinstance(s, Mapping) else {}

    @property
    def method(self) -> Method:
        if self._method is None:
            self._method = method_of(self.format, self.rows)
        return self._method

    def is_discarded(self, row: Mapping) -> bool:
        """A row the method wrote with a ``reason`` (discarded, or an output it could not make)."""
        return bool(row.get("reason"))

    @property
    def kept(self) -> List[dict]:
        return [r for r in self.rows if not self.is_discarded(r)]

    @property
    def discarded(self) -> List[dict]:
        return [r for r in self.rows if self.is_discarded(r)]

    def reasons(self) -> Counter:
        """Discarded rows per ``reason``."""
        return Counter(str(r["reason"]) for r in self.rows if self.is_discarded(r))

    def input_source(self) -> Optional[Tuple[str, str, str]]:
        """(what, license, attribution) of a known bundled input, or None."""
        return KNOWN_INPUTS.get(str((self.meta or {}).get("input", {}).get("sha256", "")))


def method_of(fmt: Optional[str], rows: List[dict]) -> Method:
    """The :class:`Method` of signature format ``fmt``, or one guessed from the columns of ``rows``
    (the first method whose text and source columns are both there; else the likeliest columns)."""
    if fmt in METHODS:
        return METHODS[fmt]
    cols = set().union(*(r.keys() for r in rows[:100])) if rows else set()
    if fmt is None:
        for m in METHODS.values():
            if m.text in cols and m.source in cols:
                return dataclasses.replace(m, guessed=True)
    text = next((c for c in _TEXT_GUESS if c in cols), "")
    source = next((c for c in _SOURCE_GUESS if c in cols and c != text), "")
    return Method(fmt or "unknown", "", "", text=text, source=source)


def texts_of(rows: List[dict], column: str) -> List[str]:
    """The texts of ``column`` in ``rows``: a str column gives one text per row, a list column each item."""
    out: List[str] = []
    for r in rows:
        v = r.get(column)
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, list):
            out.extend(x for x in v if isinstance(x, str))
    return out


def drop_counts(run: Run) -> Dict[str, int]:
    """Every count of dropped, discarded or rejected items: the summary's (nested keys joined with
    ``.``) and, for rows written with a ``reason``, ``rows.<reason>``; zero counts are kept."""
    out: Dict[str, int] = {}

    def walk(d: Mapping, prefix: str, inside: bool) -> None:
        for k, v in d.items():
            name = f"{prefix}{k}"
            hit = inside or bool(_DROP.search(str(k)))
            if isinstance(v, Mapping):
                walk(v, name + ".", hit)
            elif hit and isinstance(v, int) and not isinstance(v, bool):
                out[name] = v

    walk(run.summary, "", False)
    for reason, n in sorted(run.reasons().items()):
        out[f"rows.{reason}"] = n
    dropped = sum(r["dropped"] for r in run.rows if isinstance(r.get("dropped"), int) and not isinstance(r["dropped"], bool))
    if dropped and not any(k.startswith("dropped") for k in out):
        out["texts_dropped"] = dropped  # list outputs: texts the row filters removed
    return out


def _read_meta(path: Path) -> Optional[Dict[str, Any]]:
    side = path.with_name(path.name + ".meta.json")
    if side.is_file():
        try:
            meta = json.loads(side.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ValueError(f"{side}: not valid JSON ({exc.msg}); rerun the job that wrote it") from None
        return meta if isinstance(meta, dict) else None
    if str(path).endswith(".parquet"):
        from pysynth.io import pyarrow_parquet

        md = pyarrow_parquet(str(path)).read_schema(path).metadata or {}
        if b"pysynth" in md:
            return json.loads(md[b"pysynth"].decode("utf-8"))
    return None


def read_run(path: PathLike, what: str = "--in") -> Run:
    """Read a job's output: its rows (JSON Lines, ``.gz`` or Parquet) and ``OUT.meta.json``.

    Parameters
    ----------
    path : path
        The ``--out`` of a generating command (``pysynth qagen generate --out triples.jsonl``).
    what : str
        The argument's name in error messages.

    Returns
    -------
    Run

    Raises
    ------
    ValueError
        A missing file, a directory, bad JSON.

    Examples
    --------
    >>> run = read_run("triples.jsonl")  # doctest: +SKIP
    >>> run.method.name, len(run.kept), drop_counts(run)  # doctest: +SKIP
    ('qagen generate', 6, {'discarded': 10, 'discarded_by_reason.roundtrip_mismatch': 10, ...})
    """
    from pysynth.io import read_rows

    if str(path) == "-":
        raise ValueError(f"{what}: give the output file of a pysynth job, not stdin (its .meta.json sits beside it)")
    p = Path(path)
    rows = [dict(r) for r in read_rows(p, what)]
    return Run(p, rows, _read_meta(p))
