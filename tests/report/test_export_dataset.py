"""``pysynth export dataset``: a job's output -> a Hugging Face ``datasets`` folder with a card."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from pysynth.datasets.runs import drop_counts, method_of, read_run, texts_of

datasets = pytest.importorskip("datasets", reason='the [datasets] extra is not installed (pip install ".[datasets]")')

from pysynth.datasets.hf import dataset_card, export_dataset  # noqa: E402


def test_read_run_knows_the_method_and_the_drops(fake_run):
    run = read_run(fake_run)
    assert run.method.name == "qagen generate" and run.method.text == "question"
    assert [r["id"] for r in run.kept] == [0, "1-a"] and len(run.discarded) == 2
    d = drop_counts(run)
    assert d["discarded"] == 2 and d["discarded_by_reason.roundtrip_mismatch"] == 1
    assert d["spans_rejected.crosses_sentence"] == 3 and d["rows.not_wellformed"] == 1
    assert "contexts" not in d and "rows_written" not in d
    assert texts_of([{"q": "a"}, {"q": ["b", "c"]}, {"q": None}], "q") == ["a", "b", "c"]
    # no metadata: the method is guessed from the columns
    m = method_of(None, [{"keywords": "k", "questions": ["q?"]}])
    assert (m.name, m.text, m.source, m.guessed) == ("k2q generate", "questions", "keywords", True)
    m = method_of(None, [{"text": "k", "title": "q?"}])
    assert (m.name, m.text, m.source, m.paper) == ("unknown", "text", "", "")


def test_export_loads_with_splits_and_a_card(fake_run, tmp_path):
    out = tmp_path / "hf"
    got = export_dataset(fake_run, out, progress=False)
    assert got["splits"] == {"train": 2, "discarded": 2}
    dd = datasets.load_from_disk(str(out))
    assert set(dd) == {"train", "discarded"} and dd["train"].features == dd["discarded"].features
    assert dd["train"]["id"] == ["0", "1-a"]  # mixed int/str ids: JSON text, so Arrow can type them
    assert dd["discarded"]["reason"] == ["roundtrip_mismatch", "not_wellformed"]
    assert dd["discarded"][1]["answer_text"] is None  # a column missing from a row
    card = (out / "README.md").read_text(encoding="utf-8")
    for needle in ("license: other", "qagen generate", "Alberti", "`qagen-qg-copynet`", "cd" * 32,
                   "`qagen-span-minilm`", "- seed: `7`", "`min_wellformed`", "ab" * 32,
                   "| `discarded_by_reason.roundtrip_mismatch` | 1 |", "| `rows.not_wellformed` | 1 |",
                   "| `train` | 2 |", "Columns written as JSON text", "`id`"):
        assert needle in card, needle
    assert json.loads((out / "pysynth.meta.json").read_text())["format"] == "pysynth.qagen"
    # rerun over an earlier export replaces it; a folder of other files is refused
    export_dataset(fake_run, out, license="cc-by-sa-4.0", attribution="Me & co", progress=False)
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "license: cc-by-sa-4.0" in card and "attribution: Me & co" in card
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "x.txt").write_text("keep me")
    with pytest.raises(ValueError, match="holds no exported dataset"):
        export_dataset(fake_run, tmp_path / "other", progress=False)
    assert (tmp_path / "other" / "x.txt").read_text() == "keep me"


def test_export_k2q_synthesize(k2q_output, tmp_path):
    export_dataset(k2q_output, tmp_path / "hf", progress=False)
    dd = datasets.load_from_disk(str(tmp_path / "hf"))
    rows = [json.loads(line) for line in k2q_output.read_text().splitlines()]
    assert list(dd) == ["train"] and dd["train"]["keywords"] == [r["keywords"] for r in rows]
    card = (tmp_path / "hf" / "README.md").read_text(encoding="utf-8")
    for needle in ("k2q synthesize", "Ding and Krisztian Balog", "`strategy`", "- seed: `0`", "`no_keywords`",
                   "column `keywords`, made from column `question`", "No trained model"):
        assert needle in card, needle


def test_export_qagen_generate(qagen_output, tmp_path):
    export_dataset(qagen_output, tmp_path / "hf", progress=False)
    dd = datasets.load_from_disk(str(tmp_path / "hf"))
    run = read_run(qagen_output)
    assert dd["train"].num_rows == len(run.kept) and dd["train"].num_rows > 0
    assert dd.get("discarded") is None or dd["discarded"].num_rows == len(run.discarded)
    card = (tmp_path / "hf" / "README.md").read_text(encoding="utf-8")
    for role, spec in run.meta["models"].items():
        assert f"| {role} | `{spec['model']}` | `{spec['sha256']}` |" in card
    for reason, n in run.summary["discarded_by_reason"].items():
        assert f"| `discarded_by_reason.{reason}` | {n:,} |" in card
    assert "`neg_fraction`" in card and "question-answering" in card


def test_card_of_a_bundled_input_names_its_license(fake_run):
    run = read_run(fake_run)
    run.meta["input"]["sha256"] = "641b23ae22ba29905411df2e1627c5e436d6f7e876c2d848f8463cbe03b55081"
    card = dataset_card(run, {"train": 2})
    assert "license: cc-by-sa-4.0" in card and "SQuAD 2.0 (Rajpurkar" in card


def test_export_without_metadata(fake_run, tmp_path):
    fake_run.with_name(fake_run.name + ".meta.json").unlink()
    export_dataset(fake_run, tmp_path / "hf", progress=False)
    card = (tmp_path / "hf" / "README.md").read_text(encoding="utf-8")
    assert "`pysynth qagen generate`" in card and "recognised from the columns" in card
    assert "pysynth version not recorded" in card and "Not recorded (no `OUT.meta.json`" in card
    assert "| `rows.roundtrip_mismatch` | 1 |" in card and "license: other" in card


def test_cli_export_dataset(fake_run, tmp_path):
    out = tmp_path / "hf"
    r = subprocess.run([sys.executable, "-m", "pysynth", "export", "dataset", "--in", str(fake_run), "--out", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["splits"] == {"train": 2, "discarded": 2}
    assert datasets.load_from_disk(str(out))["train"].num_rows == 2
    r = subprocess.run([sys.executable, "-m", "pysynth", "export", "dataset", "--in", str(tmp_path / "no.jsonl"),
                        "--out", str(out)], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "no such file" in r.stderr
