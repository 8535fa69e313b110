"""Packaging and backend selection: lean import, PYSYNTH_IMPL, missing extension, py.typed."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from importlib import resources
from pathlib import Path

import pytest

import pysynth
from pysynth import _dispatch

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("torch", "triton", "onnxruntime", "onnx", "ray", "transformers", "faiss", "scipy", "pandas", "pyarrow")
#: submodules that must import without any of HEAVY (the models layer loads torch lazily)
LIGHT = ("pysynth", "pysynth.io", "pysynth.store", "pysynth.signature", "pysynth.text", "pysynth.retrieval",
         "pysynth.metrics", "pysynth.ranking", "pysynth.sampling", "pysynth.filtering", "pysynth.models",
         "pysynth.models.registry", "pysynth.models.config", "pysynth.models.vocab", "pysynth.models.io",
         "pysynth.decoding", "pysynth.decoding.search", "pysynth.export", "pysynth.k2q.neural", "pysynth.cli",
         "pysynth.pipelines", "pysynth.serve", "pysynth.stackexchange", "pysynth.mqr", "pysynth.paraphrase",
         "pysynth.retrieval.dense", "pysynth.pipelines.rows", "pysynth.dup", "pysynth.datasets.squad",
         "pysynth.datasets.stackexchange", "pysynth.data.synthetic")

# Makes ``import pysynth._core`` raise ModuleNotFoundError(name="pysynth._core"), exactly as
# when the extension was never built.
HIDE_CORE = 'import sys; sys.modules["pysynth._core"] = None\n'

HYPS = ["the cat sat on the mat", "How do I bond wireless networks?", ""]
REFS = ["the cat is on the mat", "How to bond two wireless networks?", "a b"]


def run_py(code: str, impl: str | None = None, hide_core: bool = False) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("PYSYNTH_IMPL", None)
    if impl is not None:
        env["PYSYNTH_IMPL"] = impl
    src = (HIDE_CORE if hide_core else "") + textwrap.dedent(code)
    return subprocess.run(
        [sys.executable, "-c", src], cwd=str(ROOT), env=env, capture_output=True, text=True, timeout=120, check=False
    )


def ok(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc.stdout


def compiled() -> bool:
    return "cpp" in _dispatch.available("metrics")


# ----------------------------------------------------------------------------- (a)


@pytest.mark.parametrize("module", LIGHT)
def test_lean_import(module):
    # one fresh interpreter per module, so each is checked on its own
    out = ok(run_py(f"""
        import importlib, sys
        importlib.import_module({module!r})
        heavy = {HEAVY!r}
        print(sorted(m for m in sys.modules if m.split(".")[0] in heavy))
    """))
    assert out.strip() == "[]", f"import {module} pulled in heavy modules: {out}"


def test_onnxruntime_decoding_pulls_no_torch():
    """The serving path: an onnxruntime decode of the shipped model (beam and sampling)."""
    pytest.importorskip("onnxruntime")
    out = ok(run_py("""
        import sys
        from pysynth.decoding.ort import OrtBackend
        from pysynth.models.generate import Generator
        from pysynth.models.registry import resolve
        OrtBackend(resolve("k2q-copynet-small").path / "onnx", device="cpu", threads=1)
        g = Generator.load("k2q-copynet-small", backend="onnx")
        out = g.generate(["capital france"], beam=3, n=1)
        out += g.generate(["capital france"], method="sample", n=2, top_k=5, seed=1)
        assert out[0].texts, out
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "triton", "transformers")))
    """))
    assert out.strip() == "[]", f"an onnxruntime decode pulled in: {out}"


def test_lean_import_after_scoring():
    out = ok(run_py(f"""
        import sys
        import pysynth.metrics as M
        M.rouge({HYPS!r}, {REFS!r}); M.corpus_bleu({HYPS!r}, {REFS!r})
        M.corpus_bleu({HYPS!r}, {REFS!r}, tokenize="intl")
        heavy = {HEAVY!r}
        print(sorted(m for m in sys.modules if m.split(".")[0] in heavy))
    """))
    assert out.strip() == "[]", out


# ----------------------------------------------------------------------------- (b)


@pytest.mark.parametrize("value", ["python", "PYTHON", " python "])
def test_impl_python(value):
    out = ok(run_py("""
        from pysynth import _dispatch
        import pysynth.metrics as M
        print(_dispatch.implementation("metrics"), _dispatch.implementation("ranking"))
        print(_dispatch.backend("metrics").__name__)
    """, impl=value))
    assert out.split() == ["python", "python", "pysynth.metrics._reference"]


def test_impl_cpp_when_built():
    if not compiled():
        pytest.skip("compiled extension not built")
    out = ok(run_py("""
        from pysynth import _dispatch
        print(_dispatch.implementation("metrics"), _dispatch.backend("metrics").__name__)
    """, impl="cpp"))
    assert out.split() == ["cpp", "pysynth._core.metrics"]


def test_impl_auto_default():
    want = "cpp" if compiled() else "python"
    for impl in (None, "auto", ""):
        out = ok(run_py("""
            from pysynth import _dispatch
            print(_dispatch.implementation("metrics"))
        """, impl=impl))
        assert out.strip() == want, impl


# ----------------------------------------------------------------------------- (c)


def test_impl_cpp_without_extension_raises_with_hint():
    out = ok(run_py("""
        import json
        from pysynth import _dispatch
        import pysynth.metrics as M
        res = {}
        for name, fn in (
            ("backend", lambda: _dispatch.backend("metrics")),
            ("implementation", lambda: _dispatch.implementation("metrics")),
            ("rouge", lambda: M.rouge(["a"], ["a"])),
        ):
            try:
                fn()
                res[name] = None
            except Exception as exc:
                res[name] = [type(exc).__name__, str(exc)]
        print(json.dumps(res))
    """, impl="cpp", hide_core=True))
    res = json.loads(out)
    for name, got in res.items():
        assert got is not None, f"{name} did not raise"
        kind, msg = got
        assert kind == "ImportError", (name, got)
        assert "PYSYNTH_IMPL" in msg and "pip install" in msg, (name, msg)
        assert "PYSYNTH_IMPL=python" in msg, msg  # the way out is named


def test_show_config_reports_missing_extension():
    out = ok(run_py("""
        import json, contextlib, io
        import pysynth
        with contextlib.redirect_stdout(io.StringIO()):
            cfg = pysynth.show_config()
        print(json.dumps({k: str(v) for k, v in cfg.items()}))
    """, impl="cpp", hide_core=True))
    cfg = json.loads(out)
    assert cfg["compiled"] == "False"
    assert cfg["metrics"].startswith("unavailable") and "pip install" in cfg["metrics"]


def test_other_import_errors_surface():
    """Only a missing pysynth._core means "not built"; a broken dependency must surface."""
    out = ok(run_py("""
        import sys, importlib.abc, importlib.machinery
        class Broken(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name == "pysynth._core":
                    raise ModuleNotFoundError("No module named 'libfoo'", name="libfoo")
        sys.meta_path.insert(0, Broken())
        from pysynth import _dispatch
        try:
            print(_dispatch.implementation("metrics"))
        except ModuleNotFoundError as exc:
            print("raised", exc.name)
    """, impl="auto"))
    assert out.strip() == "raised libfoo"


# ----------------------------------------------------------------------------- (d)


def test_auto_without_extension_falls_back_to_twin():
    out = ok(run_py(f"""
        import json
        from pysynth import _dispatch
        import pysynth.metrics as M
        r = M.rouge({HYPS!r}, {REFS!r}, types=("rouge1", "rouge2", "rougeL", "rougeLsum"), stem=True)
        b = M.corpus_bleu({HYPS!r}, {REFS!r})
        s = M.sentence_bleu({HYPS!r}, {REFS!r})
        c = M.corpus_bleu({HYPS!r}, {REFS!r}, flavor="coco")
        print(json.dumps({{
            "impl": _dispatch.implementation("metrics"),
            "available": sorted(_dispatch.available("metrics")),
            "rouge": {{k: v.fmeasure.tolist() for k, v in r.items()}},
            "bleu": [b.score, b.counts, b.totals],
            "sent": s.tolist(),
            "coco": c.bleu_n,
        }}))
    """, impl="auto", hide_core=True))
    got = json.loads(out)
    assert got["impl"] == "python" and got["available"] == ["python"]

    import pysynth.metrics as M

    want_impl = "cpp" if compiled() else "python"
    with _dispatch.force(want_impl, "metrics"):
        r = M.rouge(HYPS, REFS, types=("rouge1", "rouge2", "rougeL", "rougeLsum"), stem=True)
        b = M.corpus_bleu(HYPS, REFS)
        s = M.sentence_bleu(HYPS, REFS)
        c = M.corpus_bleu(HYPS, REFS, flavor="coco")
    # json round-trips float64 exactly (repr), so == is bit equality.
    assert got["rouge"] == {k: v.fmeasure.tolist() for k, v in r.items()}
    assert got["bleu"] == [b.score, b.counts, b.totals]
    assert got["sent"] == s.tolist()
    assert got["coco"] == c.bleu_n


# ----------------------------------------------------------------------------- (e)


@pytest.mark.parametrize("value", ["bogus", "c++", "1"])
def test_impl_bogus(value):
    out = ok(run_py("""
        import pysynth  # importing stays fine
        from pysynth import _dispatch
        import pysynth.metrics as M
        for fn in (lambda: _dispatch.implementation("metrics"), lambda: M.rouge(["a"], ["a"])):
            try:
                fn()
                print("no error")
            except ValueError as exc:
                print("ValueError:", exc)
    """, impl=value))
    lines = out.strip().splitlines()
    assert len(lines) == 2
    for line in lines:
        assert line.startswith("ValueError:") and "PYSYNTH_IMPL" in line, line
        assert "auto" in line and "cpp" in line and "python" in line, line


def test_force_rejects_bogus():
    with pytest.raises(ValueError, match="impl"), _dispatch.force("bogus"):
        pass


def test_force_restores():
    before = _dispatch.implementation("metrics")
    with _dispatch.force("python", "metrics"):
        assert _dispatch.implementation("metrics") == "python"
    assert _dispatch.implementation("metrics") == before


# ----------------------------------------------------------------------------- (f)


def test_show_config(capsys):
    cfg = pysynth.show_config()
    assert isinstance(cfg, dict)
    assert "metrics" in cfg and "ranking" in cfg
    assert cfg["metrics"] in ("cpp", "python")
    assert cfg["compiled"] is compiled()
    printed = capsys.readouterr().out
    assert "metrics" in printed and "ranking" in printed


# ----------------------------------------------------------------------------- (g)


def test_py_typed():
    assert (Path(pysynth.__file__).parent / "py.typed").is_file()
    assert resources.files("pysynth").joinpath("py.typed").is_file()


def test_version():
    assert isinstance(pysynth.__version__, str) and pysynth.__version__.count(".") >= 2


# ----------------------------------------------------------------------------- issue 28: a newcomer's install


def _pyproject() -> dict:
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        tomllib = pytest.importorskip("tomli")
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_distribution_name_and_extras():
    """The distribution name is not the PyPI project "pysynth" (an unrelated one); [onnx] runs the
    shipped models without torch; [export] has the exporter; [all] names every user-facing extra."""
    proj = _pyproject()["project"]
    assert proj["name"] == "pysynth-qdata"
    extras = proj["optional-dependencies"]
    assert extras["onnx"] == ["onnxruntime"]
    assert any(r.startswith("torch") for r in extras["export"]) and "onnx" in extras["export"]
    (everything,) = extras["all"]
    inside = set(everything.partition("[")[2].rstrip("]").split(","))
    assert everything.startswith(proj["name"] + "[")
    assert inside == set(extras) - {"all", "gpu", "test", "bench"}


def test_readme_extras_table_lists_every_extra():
    import re

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    rows = set(re.findall(r"^\| `([a-z]+)` \|", readme, re.M))
    assert set(_pyproject()["project"]["optional-dependencies"]) <= rows


def test_no_install_hint_names_the_taken_pypi_name():
    import re

    bad = []
    for base in ("pysynth", "kernels", "docs", "tests", "bench", "experiments", "tools"):
        for p in (ROOT / base).rglob("*"):
            if p.suffix in (".py", ".md", ".toml") and p.is_file() and p.name != "test_package.py":
                if re.search(r"pysynth\\?\[[a-z]", p.read_text(encoding="utf-8", errors="replace")):
                    bad.append(str(p.relative_to(ROOT)))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "pysynth[" not in readme
    assert not bad, f"install hints naming pysynth[...] (the PyPI name of another project): {bad}"


def test_license_changelog_citation():
    assert "Apache License" in (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert _pyproject()["project"]["license"]["text"] == "Apache-2.0"
    assert "## [Unreleased]" in (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    cff = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    assert "cff-version: 1.2.0" in cff and f"version: {pysynth.__version__}" in cff and "license: Apache-2.0" in cff


def test_method_packages_are_lazy_attributes():
    out = ok(run_py("""
        import sys, pysynth
        names = ("quality", "qagen", "paraphrase", "mqr", "dup", "k2q", "datasets", "metrics")
        print(all(f"pysynth.{n}" not in sys.modules for n in names), all(n in dir(pysynth) for n in names))
        print([getattr(pysynth, n).__name__ for n in names] == [f"pysynth.{n}" for n in names])
    """))
    assert out.split() == ["True", "True", "True"]
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        pysynth.nope  # noqa: B018


def test_metrics_meteor_is_callable_and_still_a_module():
    pytest.importorskip("pycocoevalcap")
    import types

    from pysynth import metrics
    from pysynth.metrics.meteor import meteor

    assert isinstance(metrics.meteor, types.ModuleType) and metrics.meteor.meteor is meteor
    hyps, refs = ["the cat sat on the mat"], ["the cat is on the mat"]
    assert metrics.meteor(hyps, refs).score == meteor(hyps, refs).score == metrics.meteor_score(hyps, refs).score
