"""The warm-start QG training recipe (experiments/qg_warmstart.py): features, a tiny run, resume."""
import gzip
import json
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "experiments"))
import qg_warmstart as recipe  # noqa: E402

WORDS = ["the", "a", "of", "what", "who", "is", "was", "in", "city", "river", "king", "built", "paris", "france",
         "capital", "year", "?", ".", ",", "when", "##s", "1900", "bridge", "named"]
CTX = "paris is the capital of france . the bridge was built in 1900 . the king named the river ."


def _qa(i, answer, question):
    return {"id": str(i), "question": question, "answers": [{"text": answer, "answer_start": CTX.index(answer)}]}


@pytest.fixture()
def setup(tmp_path):
    enc = tmp_path / "enc"
    enc.mkdir()
    (enc / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS) + "\n")
    qas = [_qa(0, "1900", "when was the bridge built ?"), _qa(1, "paris", "what is the capital of france ?"),
           _qa(2, "the river", "what did the king name ?")]
    data = {"version": "1.1", "data": [{"title": t, "paragraphs": [{"context": CTX, "qas": qas}]}
                                       for t in ("first", "second")]}
    squad = tmp_path / "squad.json.gz"
    with gzip.open(squad, "wt") as f:
        json.dump(data, f)
    return enc, squad, tmp_path / "run"


def test_features_are_qg_features(setup):
    from pysynth.models.warmstart import qg_features

    enc, squad, _ = setup
    train, dev, held = recipe.load_examples(squad, 1)
    assert held == ["second"] and len(train) == len(dev) == 3
    tok = recipe.tokenizer_of_minilm(enc)
    assert recipe.features(train, tok, 16, 8) == [qg_features(tok, t, s, e, 16, q, 8) for t, s, e, q in train]


def test_tiny_run_trains_logs_and_resumes(setup):
    enc, squad, run = setup
    common = ["--out", str(run), "--tiny", "--encoder", str(enc), "--data", str(squad), "--held-out-articles", "1",
              "--batch-size", "2", "--save-every", "2", "--log-every", "2", "--dev-every", "2",
              "--max-source-len", "24", "--max-target-len", "8"]
    assert recipe.main(common + ["--steps", "4"]) == 0
    from pysynth.models.warmstart import load_checkpoint

    assert load_checkpoint(run / "checkpoint.pt", restore_rng=False)[1]["step"] == 4
    logs = [json.loads(x) for x in (run / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in logs] == [2, 4] and all("dev_loss" in r for r in logs)
    with pytest.raises(SystemExit, match="--resume"):
        recipe.main(common + ["--steps", "6"])
    assert recipe.main(common + ["--steps", "6", "--resume"]) == 0
    assert load_checkpoint(run / "checkpoint.pt", restore_rng=False)[1]["step"] == 6
