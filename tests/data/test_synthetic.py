"""Synthetic question corpora (pysynth.data.synthetic): determinism, input checks, statistics,
clusters, the profile round trip and the make-corpus command."""
from __future__ import annotations

import doctest
import os
from collections import Counter

import numpy as np
import pytest

from pysynth import text
from pysynth.data import synthetic
from pysynth.data.synthetic import (
    FUNCTION_WORDS,
    Profile,
    default_profile,
    fit,
    fit_profile,
    generate,
    generate_corpus,
    write,
    write_corpus,
)

N_STATS = 20000


@pytest.fixture(scope="module")
def corpus():
    return generate_corpus(N_STATS, seed=0)


@pytest.fixture(scope="module")
def tokens(corpus):
    return text.tokenize(corpus[0], "rouge")


def test_same_seed_same_corpus_other_seed_differs():
    a = generate_corpus(3000, seed=1)
    assert a == generate_corpus(3000, seed=1)
    b = generate_corpus(3000, seed=2)
    assert a[0] != b[0]
    assert sum(x == y for x, y in zip(a[0], b[0])) < 30


def test_chunked_generation_is_one_corpus(monkeypatch):
    # more than one internal chunk: the concatenation is the corpus, chunk by chunk
    monkeypatch.setattr(generate, "_CHUNK", 1000)
    n = 1100
    qs, cl = generate_corpus(n, seed=5)
    chunks = list(synthetic.iter_corpus(n, seed=5))
    assert len(chunks) == 2
    assert qs == chunks[0][0] + chunks[1][0]
    assert cl == np.concatenate([c for _, c in chunks]).tolist()


@pytest.mark.parametrize("n", [0, -3, 2.5, True, "10", None])
def test_bad_n(n):
    with pytest.raises(ValueError, match=r"\bn must be a positive integer"):
        generate_corpus(n)
    with pytest.raises(ValueError, match=r"\bn must be"):
        write_corpus("unused.jsonl", n)


def test_bad_seed():
    with pytest.raises(ValueError, match="seed must be"):
        generate_corpus(10, seed=-1)


def _profile_dict():
    return default_profile().to_dict()


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda d: d.update(format="something else"), "synthetic-corpus profile"),
        (lambda d: d.pop("shapes"), "malformed"),
        (lambda d: d.update(clustered_fraction=1.5), "clustered_fraction"),
        (lambda d: d.update(cluster_sizes=[0, 0]), "cluster_sizes"),
        (lambda d: d["content"].update(heaps_beta=1.5), "heaps_beta"),
        (lambda d: d["content"].update(words=d["content"]["words"][:-1]), "counts"),
        (lambda d: d["content"].update(words=["what"] + d["content"]["words"][1:]), "function words"),
        (lambda d: d["paraphrase"].update(copy_prob=-0.1), "copy_prob"),
        (lambda d: d["openings"]["clustered"].append(["Bad Opening!", 3]), "openings"),
        (lambda d: d["shapes"]["unclustered"].append([2, 3, 5, 1]), "shapes"),
    ],
)
def test_bad_profile(edit, field):
    d = _profile_dict()
    edit(d)
    with pytest.raises(ValueError, match="profile") as exc:
        generate_corpus(10, profile=d)
    assert field in str(exc.value)


def test_profile_of_wrong_type_or_unreadable(tmp_path):
    with pytest.raises(TypeError, match="profile must be"):
        generate_corpus(10, profile=[1, 2])
    with pytest.raises(ValueError, match="profile: cannot read"):
        generate_corpus(10, profile=tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ValueError, match="profile: .* not valid JSON"):
        generate_corpus(10, profile=tmp_path / "bad.json")


def test_shipped_profile_is_small_and_valid():
    path = synthetic.DEFAULT_PROFILE_PATH
    assert path.is_file() and 2_000 < path.stat().st_size < 100_000
    p = default_profile()
    p.validate()
    assert p.fitted_from["questions"] > 10_000
    assert 0 < p.content["heaps_beta"] < 1 and p.content["zipf_s"] > 0


def test_questions_are_clean_text(corpus, tokens):
    qs, _ = corpus
    assert len(qs) == N_STATS
    assert all(q.endswith("?") and q.isascii() and "\n" not in q and "  " not in q for q in qs)
    assert all(len(t) >= 1 for t in tokens)
    assert all(q[0].isupper() or q[0].isdigit() for q in qs)


def test_lengths_follow_the_profile(tokens):
    p = default_profile()
    lengths = np.array([len(t) for t in tokens])
    rows = np.array([r for g in synthetic.GROUPS for r in p.shapes[g]], dtype=np.float64)
    assert rows[:, 1].min() <= lengths.min() and lengths.max() <= rows[:, 1].max()
    f = p.clustered_fraction
    expect = sum(
        w * np.average([r[1] for r in p.shapes[g]], weights=[r[3] for r in p.shapes[g]])
        for g, w in (("clustered", f), ("unclustered", 1 - f))
    )
    assert abs(lengths.mean() - expect) < 0.1
    # the length histogram of the sample against the profile's
    prof = Counter()
    for g, w in (("clustered", f), ("unclustered", 1 - f)):
        tot = sum(r[3] for r in p.shapes[g])
        for r in p.shapes[g]:
            prof[r[1]] += w * r[3] / tot
    got = Counter(lengths.tolist())
    tv = 0.5 * sum(abs(got.get(k, 0) / len(lengths) - prof.get(k, 0)) for k in set(got) | set(prof))
    assert tv < 0.03


def test_zipf_slope_near_the_profile(tokens):
    p = default_profile()
    cw = Counter(w for t in tokens for w in t if w not in FUNCTION_WORDS)
    f = np.array(sorted(cw.values(), reverse=True), dtype=np.float64)
    head = np.asarray(p.content["counts"], dtype=np.float64)
    r = np.unique(np.round(np.logspace(1, np.log10(300), 20)).astype(int))

    def slope(x):
        return np.polyfit(np.log(r), np.log(x[r - 1]), 1)[0]

    assert abs(slope(f) - slope(head)) < 0.1
    # the most frequent content words are the profile's
    assert len({w for w, _ in cw.most_common(10)} & set(p.content["words"][:20])) >= 7


def test_clusters_are_well_formed(corpus, tokens):
    _, cl = corpus
    p = default_profile()
    cl = np.asarray(cl)
    assert cl.min() == -1
    assert (cl >= 0).sum() == round(N_STATS * p.clustered_fraction)
    ids = cl[cl >= 0]
    first = np.unique(ids, return_index=True)[1]
    assert np.array_equal(np.unique(ids), np.arange(ids.max() + 1))  # 0..K-1, no gaps
    assert np.array_equal(ids[np.sort(first)], np.arange(ids.max() + 1))  # numbered by first appearance
    sizes = np.bincount(ids)
    assert sizes.min() >= 1 and sizes.max() <= len(p.cluster_sizes)
    # paraphrases share content words (as the profile says) and unrelated questions do not
    cw = [[w for w in t if w not in FUNCTION_WORDS] for t in tokens]
    vocab = {w: i for i, w in enumerate({w for x in cw for w in x})}
    flat = np.array([vocab[w] for x in cw for w in x], dtype=np.int64)
    off = np.concatenate([[0], np.cumsum([len(x) for x in cw])])
    overlap, _ = fit._cluster_overlap(flat, off, cl)
    assert abs(overlap - p.paraphrase["overlap"]) < 0.06
    shuffled = np.random.default_rng(0).permutation(cl)
    assert fit._cluster_overlap(flat, off, shuffled)[0] < 0.4


def test_vocabulary_grows_with_n():
    # Heaps' law beyond the fitted data; the fitted law itself up to its size
    m = generate._Model(default_profile())
    v = [m.support(n) for n in (10, 1000, 100_000, 1_000_000, 3_170_000)]
    assert v[0] == v[1] > len(default_profile().content["words"])
    assert v[1] < v[2] < v[3] < v[4]
    # ranks beyond the real words are pseudo-words, distinct from every real word
    c = generate._Corpus(100, 0, default_profile())
    words = [bytes(c.tab[o:o + k]).decode() for o, k in zip(c.tab_off, c.tab_len)]
    pseudo = words[c.content_base + len(default_profile().content["words"]):]
    assert len(pseudo) == c.v - len(default_profile().content["words"]) and len(set(pseudo)) == len(pseudo)
    assert not set(pseudo) & (set(words[:c.content_base + len(default_profile().content["words"])]))


def test_pseudo_words_are_distinct_and_avoid_real_words():
    buf, lens = generate._pseudo_words(5000, {b"bababa", b"dababa"})
    off = np.concatenate([[0], np.cumsum(lens)])
    words = [bytes(buf[off[i]:off[i + 1]]).decode() for i in range(len(lens))]
    assert len(set(words)) == 5000 and "bababa" not in words and "dababa" not in words
    assert all(w.isalpha() and w.islower() and len(w) >= 6 for w in words)


def test_fit_profile_roundtrip_and_recovery(tmp_path):
    qs, cl = generate_corpus(8000, seed=3)
    p = fit_profile(qs, cl, sim_questions=300, top_words=500)
    assert abs(p.clustered_fraction - default_profile().clustered_fraction) < 0.01
    assert len(p.content["words"]) == 500
    r = np.unique(np.round(np.logspace(1, np.log10(300), 20)).astype(int))
    head_slope = [np.polyfit(np.log(r), np.log(np.asarray(x.content["counts"], float)[r - 1]), 1)[0]
                  for x in (p, default_profile())]
    assert abs(head_slope[0] - head_slope[1]) < 0.1
    assert abs(p.paraphrase["overlap"] - default_profile().paraphrase["overlap"]) < 0.08
    path = p.save(tmp_path / "p.json")
    q = Profile.load(path)
    assert q.to_dict() == p.to_dict()
    a = generate_corpus(300, seed=1, profile=path)
    assert a == generate_corpus(300, seed=1, profile=q)
    assert len(a[0]) == 300


def test_fit_profile_input_checks():
    with pytest.raises(ValueError, match="questions is empty"):
        fit_profile([], [])
    with pytest.raises(ValueError, match="clusters must have one id per question"):
        fit_profile(["what is it"], [0, 1])
    with pytest.raises(TypeError, match="questions"):
        fit_profile("what is it", [0])
    with pytest.raises(ValueError, match="top_words"):
        fit_profile(["what is a cat"] * 5, [-1] * 5, top_words=0)


def test_write_is_atomic(tmp_path, monkeypatch):
    out = tmp_path / "c.jsonl.gz"
    write_corpus(out, 100, seed=0)
    before = out.read_bytes()
    real = synthetic.iter_corpus

    def failing(*a, **k):
        it = real(*a, **k)
        yield next(it)
        raise KeyboardInterrupt  # killed half way

    monkeypatch.setattr(write, "iter_corpus", failing)
    monkeypatch.setattr(generate, "_CHUNK", 64)
    with pytest.raises(KeyboardInterrupt):
        write_corpus(out, 200, seed=0)
    assert out.read_bytes() == before  # the old file is untouched
    assert os.listdir(tmp_path) == ["c.jsonl.gz"]  # and no partial file is left


@pytest.mark.parametrize("module", [synthetic, fit, generate, write])
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and (result.attempted > 0 or module is write)


def test_old_import_path_is_the_same_module():
    from pysynth.k2q import synthetic as old
    from pysynth.k2q.synthetic import generate_corpus as old_gen

    assert old is synthetic and old_gen is generate_corpus
