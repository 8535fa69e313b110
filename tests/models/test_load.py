"""pysynth.models.load: any model folder -> the object that runs it, decided by the folder alone;
shipped models declare themselves in a model.json beside their files."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from pysynth import models
from pysynth.models import loader, registry

pytest.importorskip("onnxruntime")


def test_every_shipped_model_declares_itself_and_loads_as_its_task():
    names = registry.models()
    assert len(names) >= 9 and "k2q-copynet-small" in names
    for name in names:
        m = registry.shipped(name)
        decl = json.loads((m.directory / registry.DECLARATION).read_text(encoding="utf-8"))
        assert decl["name"] == name and decl["arch"] == m.arch and decl["task"] == m.task
        task, kind, path = models.task_of(name)
        assert task == m.task and path == m.directory, name


@pytest.mark.parametrize("name, cls", [
    ("k2q-copynet-small", "ModelText2Text"), ("qagen-qg-copynet", "ModelText2Text"),
    ("qagen-span-minilm", "SpanModel"), ("wellformed-minilm", "OnnxClassifier"), ("dup-minilm-wstb", "OnnxEncoder"),
])
def test_load_returns_the_right_object(name, cls):
    obj = models.load(name, threads=1)
    assert type(obj).__name__ == cls
    assert getattr(obj, "name", name) == name or cls == "OnnxEncoder"


def test_objects_work_and_match_the_method_loaders():
    from pysynth.quality import WellformednessModel

    qs = ["what is the capital of france?", "capital france"]
    clf = models.load("wellformed-minilm", task="classifier")
    assert clf(qs).tolist() == WellformednessModel().__call__(qs).tolist()
    spans = models.load("qagen-span-minilm", task="qa")
    out = spans.extract(["Oxygen was discovered by Carl Wilhelm Scheele in 1773."], k=2)
    assert len(out) == 1 and 1 <= len(out[0]) <= 2
    gen = models.load("k2q-copynet-small", task="seq2seq")
    assert gen.generate(["capital france"])[0].texts


def test_task_mismatch_and_unknown_formats(tmp_path):
    with pytest.raises(ValueError, match="is a classifier model .*not a text2text model"):
        models.load("wellformed-minilm", task="text2text")
    with pytest.raises(ValueError, match="^task: must be one of"):
        models.load("wellformed-minilm", task="vision")
    from pysynth import store

    store.save(tmp_path / "x", "pysynth.other", 1, files={"a.txt": b"a"})
    with pytest.raises(ValueError, match="'pysynth.other' store"):
        models.load(tmp_path / "x")
    loader.register_loader("pysynth.other", "encoder", lambda path, **kw: ("mine", path, kw["threads"]))
    try:
        assert models.load(tmp_path / "x", threads=3) == ("mine", tmp_path / "x", 3)
    finally:
        loader._FORMATS.pop("pysynth.other")


def test_hugging_face_folders_by_their_config(tmp_path):
    for archs, task in ((["T5ForConditionalGeneration"], "text2text"), (["BertForQuestionAnswering"], "spans"),
                        (["BertModel"], "encoder")):
        d = tmp_path / archs[0]
        d.mkdir()
        (d / "config.json").write_text(json.dumps({"model_type": "x", "architectures": archs}))
        assert models.task_of(d)[:2] == (task, "hf")


def test_models_declared_in_another_folder(tmp_path):
    d = tmp_path / "mine"
    d.mkdir()
    (d / registry.DECLARATION).write_text(json.dumps({"name": "mine-test-model", "arch": "copynet",
                                                      "task": "text2text"}))
    try:
        assert registry.register_models_in(tmp_path) == ["mine-test-model"]
        assert registry.resolve("mine-test-model").path == d
        assert registry.register_models_in(tmp_path) == ["mine-test-model"]  # the same declaration again: fine
    finally:
        registry._MODELS.pop("mine-test-model")
    (d / registry.DECLARATION).write_text("[1]")
    with pytest.raises(ValueError, match="not a model declaration"):
        registry.register_models_in(tmp_path)


def test_loading_an_onnx_model_imports_no_torch():
    code = ("import sys; from pysynth import models; models.load('k2q-copynet-small').generate(['capital france']); "
            "models.load('wellformed-minilm')(['a?']); print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
