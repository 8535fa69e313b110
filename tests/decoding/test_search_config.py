"""One SearchConfig for every generator: validated once, naming the field; method configurations
build it (ParaphraseConfig.search, QAGenConfig.search) and keep their own option names in errors."""
from __future__ import annotations

import dataclasses

import pytest

from pysynth.decoding import SearchConfig
from pysynth.decoding.config import DECODES, renamed


def test_defaults_and_aliases():
    c = SearchConfig()
    assert (c.decode, c.beam, c.groups, c.outputs, c.method) == ("beam", 5, 1, 5, "beam")
    d = SearchConfig(decode="diverse", beam=8, groups=4, n=3)
    assert (d.decode, d.method, d.outputs) == ("dbs", "diverse", 3)
    assert set(DECODES) == {"greedy", "beam", "dbs", "sample"}
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.beam = 3
    assert c.replace(beam=2).beam == 2 and c.as_dict()["beam"] == 5


@pytest.mark.parametrize("kw, field", [
    (dict(decode="nucleus"), "decode"), (dict(beam=0), "beam"), (dict(beam=True), "beam"),
    (dict(groups=0), "groups"), (dict(decode="dbs", beam=6, groups=4), "groups"),
    (dict(diversity=-1.0), "diversity"), (dict(diversity=float("nan")), "diversity"), (dict(n=0), "n"),
    (dict(top_k=-1), "top_k"), (dict(top_p=0.0), "top_p"), (dict(top_p=1.5), "top_p"),
    (dict(temperature=0.0), "temperature"), (dict(max_len=0), "max_len"), (dict(length_penalty="cubic"),
                                                                           "length_penalty"),
    (dict(alpha=float("inf")), "alpha"), (dict(seed=-1), "seed"),
])
def test_each_field_is_checked_and_named(kw, field):
    with pytest.raises(ValueError, match=rf"^{field}:"):
        SearchConfig(**kw)


def test_groups_only_matter_for_dbs():
    assert SearchConfig(decode="beam", beam=6, groups=4).groups == 4  # not a diverse search: not checked
    with pytest.raises(ValueError, match="e.g. beam=4"):
        SearchConfig(decode="dbs", beam=6, groups=4)
    with pytest.raises(ValueError, match="^groups:"):
        SearchConfig(decode="beam", beam=8).replace(decode="dbs", groups=3)


def test_renamed_speaks_the_callers_option_names():
    with pytest.raises(ValueError) as e:
        SearchConfig(decode="dbs", beam=6, groups=4)
    msg = str(renamed(e.value, {"beam": "beams"}))
    assert msg.startswith("groups:") and "beams=6" in msg
    assert str(renamed(ValueError("beam: must be a positive integer, got 0"), {"beam": "beams"})).startswith("beams:")
    assert str(renamed(ValueError("no colon here"), {"beam": "beams"})) == "no colon here"


def test_method_configs_build_it():
    from pysynth.paraphrase import ParaphraseConfig
    from pysynth.qagen.pipeline import QAGenConfig

    p = ParaphraseConfig(beams=8, groups=4, diversity=0.3, seed=2)
    assert p.search == SearchConfig(decode="dbs", beam=8, groups=4, diversity=0.3, n=8, seed=2)
    assert "search" not in p.as_dict()  # not a field: run signatures are unchanged
    with pytest.raises(ValueError, match="^beams:"):
        ParaphraseConfig(beams=0)
    with pytest.raises(ValueError, match="^top_p:"):
        ParaphraseConfig(decode="sample", top_p=2.0)
    q = QAGenConfig(decode="dbs", beam_size=4)
    assert (q.search.decode, q.search.beam, q.search.groups, q.search.n) == ("dbs", 4, 2, 1)
    with pytest.raises(ValueError, match="beam_size=5"):
        QAGenConfig(decode="dbs", beam_size=5)
    assert "search" not in q.as_dict()
