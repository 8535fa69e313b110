"""METEOR 1.5: the Java-free flavor ("exact", compiled and its Python twin) against the golden
values of ``tests/golden/meteor_mqr.json`` (made with the jar, nlg-eval's ``-l en -norm``), the
MQR paper's Table 6 column, and the jar flavor itself when Java is here."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from pysynth._dispatch import force
from pysynth.metrics.meteor import meteor

GOLDEN = json.loads((Path(__file__).resolve().parents[1] / "golden" / "meteor_mqr.json").read_text(encoding="utf-8"))


def _jar_available() -> bool:
    try:
        from pysynth.metrics.meteor import meteor_jar

        meteor_jar()
    except ImportError:
        return False
    return shutil.which("java") is not None


def _resources_available() -> bool:
    try:
        from pysynth.metrics._meteor_data import find_files

        find_files()
    except ImportError:
        return False
    return True


def _cpp_available() -> bool:
    try:
        from pysynth._dispatch import available

        return hasattr(available("metrics").get("cpp"), "meteor_stats")
    except ImportError:
        return False


need_jar = pytest.mark.skipif(not _jar_available(), reason="Java or pycocoevalcap's meteor-1.5.jar missing")
# The Java-free flavor reads the jar's word lists (no Java) and builds the paraphrase cache once (~1 min).
need_res = pytest.mark.skipif(not _resources_available(), reason="pycocoevalcap (meteor-1.5.jar + paraphrase-en.gz) "
                                                                  "missing")
need_cpp = pytest.mark.skipif(not _cpp_available(), reason="compiled METEOR not built")
IMPLS = [pytest.param("cpp", marks=need_cpp), "python"]


def _close(got, want):
    assert len(got) == len(want)
    bad = [i for i, (a, b) in enumerate(zip(got, want)) if abs(a - b) > 1e-9]
    assert not bad, f"{len(bad)} segments differ, first {bad[:5]}"


def test_golden_reproduces_the_papers_column():
    full = GOLDEN["full_test"]
    assert full["n"] == 1690
    for system, paper in full["paper"].items():
        # the shared test set is 80 % of the paper's: within 0.25 points
        assert abs(100 * full["corpus"][system] - paper) < 0.25, system


@need_res
@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("system", ["ill_formed", "lstm", "transformer"])
def test_exact_flavor_equals_the_jar(system, impl):
    g = GOLDEN["systems"][system]
    with force(impl, "metrics"):
        m = meteor(g["hyps"], GOLDEN["refs"])
    assert m.signature["flavor"] == "exact" and m.signature["impl"] == impl
    _close(m.segments, g["segments"])
    assert abs(m.score - g["corpus"]) < 1e-9


@need_res
@pytest.mark.parametrize("impl", IMPLS)
def test_exact_flavor_on_hard_cases(impl):
    """Two reference streams, punctuation, numbers, Unicode, empty strings, repeated words,
    stem-, synonym- and paraphrase-only matches (golden values from the jar)."""
    c = GOLDEN["cases"]
    with force(impl, "metrics"):
        m = meteor(c["hyps"], c["refs"])
    _close(m.segments, c["segments"])
    assert abs(m.score - c["corpus"]) < 1e-9


@need_res
@need_cpp
def test_compiled_and_twin_give_identical_statistics():
    from pysynth.metrics import _meteor_ref as ref
    from pysynth.metrics.meteor import _resources

    cres, nbp = _resources("cpp")
    pres, _ = _resources("python")
    from pysynth._dispatch import available

    core = available("metrics")["cpp"]
    g = GOLDEN["systems"]["lstm"]
    hyps = [ref.normalize(h, nbp) for h in g["hyps"][:80] + GOLDEN["cases"]["hyps"]]
    refs = [[ref.normalize(r, nbp)] for r in GOLDEN["refs"][:80]]
    refs += [[ref.normalize(s[i], nbp) for s in GOLDEN["cases"]["refs"]] for i in range(len(GOLDEN["cases"]["hyps"]))]
    a = core.meteor_stats(cres, hyps, refs, 1)
    assert core.meteor_score_from_stats(a[0]) == ref.meteor_score_from_stats(a[0])
    b = ref.meteor_stats(pres, hyps, refs)
    assert np.array_equal(a, b)
    assert np.array_equal(core.meteor_stats(cres, hyps, refs, 3), a)  # workers do not change results
    words = sorted({w for h in hyps for w in h.split()} | {"generously", "communication", "skies", "dying", "'tis",
                                                           "sayyid", "hopping", "agreed", "feed", "cries"})
    assert [core.meteor_stem(w) for w in words] == [ref.stem(w) for w in words]


def test_snowball_stems():
    from pysynth.metrics._meteor_ref import stem

    pairs = {"running": "run", "generously": "generous", "communication": "communic", "skies": "sky",
             "dying": "die", "hopped": "hop", "agreed": "agre", "cries": "cri", "ties": "tie", "gas": "gas",
             "caresses": "caress", "happily": "happili", "relational": "relat", "news": "news"}
    assert {w: stem(w) for w in pairs} == pairs


def test_normalizer():
    from pysynth.metrics._meteor_ref import normalize

    nbp = {"Mr": 1, "No": 2}
    assert normalize("Don't stop, U.S.-based Mr. Smith!", nbp) == "don 't stop , us based mr. smith !"  # the jar's Normalizer
    assert normalize("No. 5 and 1,000.50... ok", nbp) == "no. 5 and 1,000.50 ... ok"
    assert normalize("  ", nbp) == ""


def _mqr_dir():
    try:
        from pysynth.data import shared_dir

        d = shared_dir() / "mqr"
    except FileNotFoundError:
        return None
    return d if (d / "test_system_rewrites.jsonl.gz").is_file() else None


@need_res
@need_cpp
@pytest.mark.skipif(_mqr_dir() is None, reason="shared MQR data missing")
def test_exact_flavor_reproduces_table6():
    """The jar's corpus METEOR of the six released systems on the whole shared MQR test set
    (Table 6's column, Chu et al. 2020), to the last bit, without Java."""
    import gzip

    d = _mqr_dir()
    test = [json.loads(x) for x in gzip.open(d / "test.jsonl.gz")]
    rel = {r["row_idx"]: r for r in map(json.loads, gzip.open(d / "test_system_rewrites.jsonl.gz"))}
    refs = [r["well_formed"].strip() for r in test]
    for system, want in GOLDEN["full_test"]["corpus"].items():
        hyps = [r["ill_formed"].strip() if system == "ill_formed" else rel[r["row_idx"]][system].strip() for r in test]
        with force("cpp", "metrics"):
            assert meteor(hyps, refs, workers=2).score == want, system


@need_res
def test_normalizer_equals_the_jars():
    """The jar's own Normalizer (edu.cmu.meteor.util.Normalizer en, punctuation kept) on tricky
    and random strings: nonbreaking prefixes, dots, commas in numbers, quotes, dashes, Unicode
    spaces, control characters."""
    from pysynth.metrics import _meteor_data as data
    from pysynth.metrics._meteor_ref import _nbp_table, normalize

    nbp = _nbp_table(data.load_text_resources(data.find_files().jar)["prefixes"])
    g = GOLDEN["normalizer"]
    got = [normalize(x, nbp) for x in g["in"]]
    bad = [i for i, (a, b) in enumerate(zip(got, g["out"])) if a != b.lower()]
    assert not bad, [(g["in"][i], got[i], g["out"][i]) for i in bad[:3]]


@need_cpp
@need_res
def test_compiled_normalizer_equals_the_twin():
    """meteor_normalize (compiled: ASCII texts; None for the others) against the twin's prepare on the
    golden Normalizer strings, the MQR texts and random punctuation-heavy ASCII."""
    import random

    from pysynth._dispatch import available
    from pysynth.metrics import _meteor_data as data
    from pysynth.metrics import _meteor_ref as ref

    nbp = ref._nbp_table(data.load_text_resources(data.find_files().jar)["prefixes"])
    rnd = random.Random(29)
    parts = list("aAzZ09 .,'`-\"?|\t\n\x0b\x0c\r\x1c\x01") + ["DOTMULTI", "DOTDOTMULTI", "Mr", "No", "U.S",
                                                               "...", "''", "--", "|||", "'s", "n't", "1,000", "é"]
    texts = list(GOLDEN["normalizer"]["in"]) + GOLDEN["refs"] + GOLDEN["systems"]["ill_formed"]["hyps"]
    texts += ["".join(rnd.choice(parts) for _ in range(rnd.randint(0, 12))) for _ in range(20000)]
    got = {name: mod.meteor_normalize(texts, nbp) for name, mod in available("metrics").items()}
    assert got["cpp"] == got["python"]
    assert all((g is None) == (not t.isascii()) for g, t in zip(got["cpp"], texts))
    assert [g for g in got["cpp"] if g is not None] == [ref.prepare(t, nbp) for t in texts if t.isascii()]


@need_cpp
def test_normalize_refuses_alike():
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from _parity import call_all

    for texts, nbp, exc in ((["a"], [], TypeError), (["a"], {1: 1}, TypeError), (["a"], {"Mr": True}, TypeError),
                            (["a"], {"Mr": 3}, ValueError), (["a"], {"M\ud800": 1}, ValueError),
                            ("abc", {}, TypeError), ([b"a"], {}, TypeError), (["a\ud800"], {}, ValueError)):
        with pytest.raises(exc):
            call_all("metrics", "meteor_normalize", texts, nbp)
    assert call_all("metrics", "meteor_normalize", ["Mr. Smith ||| went ...", "é"], {"Mr": 1}) == \
        ["mr. smith went ...", None]


def test_bad_input():
    with pytest.raises(ValueError, match="flavor"):
        meteor(["a"], ["a"], flavor="java-free")
    with pytest.raises(ValueError, match="language"):
        meteor(["a"], ["a"], language="de")
    with pytest.raises(ValueError, match="workers"):
        meteor(["a"], ["a"], workers=0)
    with pytest.raises(ValueError, match=r"refs\[0\]: 1 segments but hyps has 2"):
        meteor(["a", "b"], ["a"])
    with pytest.raises(TypeError, match=r"hyps\[1\]"):
        meteor(["a", 2], ["a", "b"])
    with pytest.raises(TypeError, match="one str"):
        meteor("a", ["a"])
    assert meteor([], []).score == 0.0


@pytest.mark.parametrize("impl", ["cpp", "python"])
def test_lone_surrogate_is_refused_by_every_backend(impl, monkeypatch):
    """The compiled intake refuses an unpaired surrogate; the twin must refuse it the same way."""
    if impl == "cpp":
        pytest.importorskip("pysynth._core")
    monkeypatch.setenv("PYSYNTH_IMPL", impl)
    for hyps, refs, where in ((["ok", "bad \ud800"], ["ok", "ok"], r"hyps\[1\]"),
                              (["ok"], [["\udfff"]], r"refs\[0\]\[0\]")):
        with pytest.raises(ValueError, match=where + ".*lone surrogate"):
            meteor(hyps, refs)


def test_missing_resources_name_the_fix(monkeypatch, tmp_path):
    from pysynth.metrics._meteor_data import find_files

    monkeypatch.setenv("PYSYNTH_METEOR_JAR", str(tmp_path / "nope.jar"))
    with pytest.raises(ImportError, match="pip install pycocoevalcap"):
        find_files()


@need_jar
@pytest.mark.parametrize("system", ["ill_formed", "lstm", "transformer"])
def test_jar_flavor_equals_the_golden_values(system):
    g = GOLDEN["systems"][system]
    m = meteor(g["hyps"], GOLDEN["refs"], flavor="jar")
    assert m.score == g["corpus"] and m.segments == g["segments"]


@need_jar
def test_texts_that_would_break_the_protocol():
    m = meteor(["a cat ||| on\nthe mat", "the dog"], [["the cat on the mat", "a dog"], ["a cat", "the dog"]],
               flavor="jar")
    assert len(m.segments) == 2 and 0 < m.score <= 1 and m.segments[1] > 0.9


def _tiny_resources():
    """Resources in the jar's formats, small enough to edit: a paraphrase 'new york' <-> 'ny'."""
    from pysynth.metrics._meteor_data import paraphrase_arrays

    para, meta = paraphrase_arrays([b"0.5", b"new york", b"ny", b"0.5", b"big apple", b"new york city"])
    return [b"the\nof\n", b"run\nran running\n", b"car\n1 2\nauto\n2\n", para, meta["max_len"]]


@need_cpp
def test_resources_and_stats_of_both_backends_agree_on_a_tiny_table():
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from _parity import backends

    args = _tiny_resources()
    got = {name: mod.meteor_stats(mod.meteor_resources(*args), ["the ny car running", "big apple"],
                                  [["the new york auto runs"], ["new york city", "big"]], 2 ** 63)
           for name, mod in backends("metrics").items()}
    assert np.array_equal(got["cpp"], got["python"])
    assert got["python"][0, 7] == 1 and got["python"][0, 5] == 1 and got["python"][0, 6] == 1  # para, stem, synonym


def _broken(key, value):
    args = _tiny_resources()
    if key == "max_len":
        args[4] = value
    elif key in ("function_words", "synsets"):
        args[0 if key == "function_words" else 2] = value
    else:
        args[3] = dict(args[3], **{key: value(args[3][key])})
    return args


@need_cpp
@pytest.mark.parametrize("key, value, exc", [
    ("grp_par", lambda a: a + 5, ValueError),                       # a phrase id out of range
    ("phr_off", lambda a: a[::-1].copy(), ValueError),              # offsets that decrease
    ("vocab_off", lambda a: np.append(a, 99), ValueError),          # past the end of the blob
    ("htab_val", lambda a: np.abs(a), ValueError),                  # no empty slot: a lookup would never end
    ("pfx_val", lambda a: a[:-1], ValueError),
    ("grp_hash", lambda a: a[:-1], ValueError),
    ("phr_off", lambda a: a.astype(np.int32), TypeError),           # not its dtype (no silent cast)
    ("htab_key", lambda a: a.astype(">u8"), TypeError),
    ("phr_tok", lambda a: a.tolist(), TypeError),
    ("grp_ptr", lambda a: a.reshape(1, -1), ValueError),
    ("max_len", -1, ValueError),
    ("max_len", 2 ** 31, ValueError),                               # not pybind11's TypeError
    ("max_len", 2.0, TypeError),
    ("synsets", b"car\n1 x\n", ValueError),                         # a synset id that is not an int32
    ("synsets", b"car\n2147483648\n", ValueError),
    ("function_words", "the\nof", TypeError),
])
def test_broken_resources_are_refused_alike(key, value, exc):
    """Found by fuzz/ (the binding fuzzer): the compiled resources trusted the cache's indices (out-of-bounds
    reads on an edited cache) and the twin raised IndexError/KeyError or nothing."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from _parity import call_all

    with pytest.raises(exc):
        call_all("metrics", "meteor_resources", *_broken(key, value))


@need_cpp
def test_stem_and_score_refuse_alike():
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from _parity import call_all

    for word, exc in ((b"running", TypeError), (None, TypeError), ("run\ud800", ValueError)):
        with pytest.raises(exc):
            call_all("metrics", "meteor_stem", word)
    for st, exc in ((np.zeros(22), ValueError), (np.zeros((1, 23)), ValueError), ("abc", TypeError)):
        with pytest.raises(exc):
            call_all("metrics", "meteor_score_from_stats", st)
    st = np.zeros(23)
    st[[0, 1, 20, 21, 22]] = [1, 1, -1, 1, 1]  # negative fragmentation: C's pow gives NaN, score 0
    assert call_all("metrics", "meteor_score_from_stats", st) == 0.0


def test_meteor_score_is_the_package_level_name():
    # pysynth.metrics.meteor is the module; its function is pysynth.metrics.meteor_score
    import types

    import pysynth.metrics as M
    from pysynth.metrics.meteor import meteor

    assert isinstance(M.meteor, types.ModuleType)
    assert M.meteor_score is meteor and M.meteor.meteor is meteor
