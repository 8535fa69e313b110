"""JSON rows in pipeline parts (pysynth.pipelines.rows): round trip, slices, the part check."""
import numpy as np

from pysynth.pipelines.rows import check_rows, pack_rows, unpack_rows


def test_round_trip_keeps_order_types_and_unicode():
    rows = [{"id": 1, "q": "Qu'est-ce que c'est ?", "a": [1, 2.5, None]}, {"b": {"x": "é\u2028"}}, {}]
    d = pack_rows(rows)
    assert d["rows"].dtype == np.uint8 and d["rows_off"].tolist()[0] == 0
    assert unpack_rows(d) == rows and list(unpack_rows(d)[0]) == ["id", "q", "a"]
    assert check_rows(d, 3) and not check_rows(d, 2) and not check_rows(d, 3, "other")


def test_empty_and_prefix():
    d = pack_rows([], "stats")
    assert unpack_rows(d, "stats") == [] and check_rows(d, 0, "stats")
