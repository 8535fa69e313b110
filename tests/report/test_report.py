"""``pysynth report``: one self-contained HTML page, escaped, shown in headless Chromium offline.

The browser test skips when selenium, Chromium or chromedriver is missing (as tests/serve/test_page.py);
nothing is downloaded (the driver is given by path, selenium-manager is kept offline) and the page is
opened from a file with the browser's network emulated offline. ``PYSYNTH_SCREENSHOT_DIR`` keeps the
screenshot.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from pysynth.datasets.runs import read_run
from pysynth.quality.report import distinct_n, question_word, render_html, report_data, self_bleu, write_report

_URL = re.compile(r"(https?:|//[a-z0-9]|@import|url\()", re.I)


class _Tags(HTMLParser):
    """Every tag and attribute name of a page (text, escaped or not, is not a tag)."""

    def __init__(self):
        super().__init__()
        self.tags, self.attrs = set(), set()

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.attrs.update(a for a, _ in attrs)


def test_diversity_numbers():
    assert distinct_n(["a b c", "a b d"], 1) == pytest.approx(4 / 6)
    assert distinct_n(["a b c", "a b d"], 2) == pytest.approx(3 / 4)
    assert distinct_n([], 2) == 0.0 and distinct_n(["a"], 2) == 0.0
    with pytest.raises(ValueError, match="n: must be >= 1"):
        distinct_n(["a"], 0)
    assert self_bleu(["the cat sat on the mat"] * 3) == pytest.approx(1.0)
    diverse = self_bleu(["the cat sat on the mat", "a dog ran in the park today", "who wrote war and peace"])
    assert 0.0 <= diverse < 0.2
    assert self_bleu(["only one"]) is None
    # the sample is seeded: the same texts, the same number
    texts = [f"question number {i} about topic {i % 7}" for i in range(300)]
    assert self_bleu(texts, seed=1) == self_bleu(texts, seed=1)
    assert [question_word(t) for t in ("What is it?", "  how_many legs", "Is it?", "paris", "")] == [
        "what", "how", "is", "other", "other"]


def test_report_is_self_contained_and_escapes(fake_run, tmp_path):
    out = tmp_path / "r.html"
    got = write_report(fake_run, out, wellformed="off")
    page = out.read_text(encoding="utf-8")
    assert got["rows"] == 4 and got["kept_rows"] == 2 and got["discarded_rows"] == 2
    assert "<script>alert" not in page and "<img" not in page and "onerror=alert(1)>" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page  # shown as text, in both tables
    assert _URL.findall(page) == []  # no external asset, no link at all
    tags = _Tags()
    tags.feed(page)
    assert not tags.tags & {"img", "link", "iframe", "object", "embed", "audio", "video", "source", "a", "base"}
    assert not tags.attrs & {"src", "href", "srcset", "onerror", "onload", "action"}, tags.attrs
    assert page.count("<script>") == 1 and page.count("</table>") == page.count("<table")
    for needle in ("Keep rate and drops", "roundtrip_mismatch", "crosses_sentence", "distinct-2", "self-BLEU",
                   "Well-formedness", "Similarity and other scores", "Kept rows", "Discarded rows",
                   "qagen-qg-copynet", "cd" * 32, "Alberti"):
        assert needle in page, needle
    d = report_data(read_run(fake_run), wellformed="off")
    assert d["wellformed"]["source"] == "the run's wellformed column" and d["wellformed"]["values"] == [0.91, 0.12]
    assert d["scores"]["similarity"] == [0.8, 0.4]
    json.dumps(d)  # JSON-able


def test_report_options_and_errors(fake_run, tmp_path):
    run = read_run(fake_run)
    for r in run.rows:
        r.pop("wellformed", None)
    d = report_data(run, wellformed="off", sample=1)
    assert "skipped" in d["wellformed"] and len(d["sample_kept"]) == 1
    assert "Skipped: not asked for" in render_html(d)
    with pytest.raises(ValueError, match="wellformed: one of auto, on, off"):
        report_data(run, wellformed="yes")
    with pytest.raises(ValueError, match="--field: no column 'nope'"):
        report_data(run, field="nope")
    with pytest.raises(ValueError, match="is a folder"):
        write_report(fake_run, tmp_path)


def test_report_of_real_runs(k2q_output, qagen_output, tmp_path):
    pytest.importorskip("onnxruntime", reason="the well-formedness model needs onnxruntime")
    k = report_data(read_run(k2q_output), max_scored=50)
    assert k["text_column"] == "keywords" and k["texts"] == 8 and len(k["wellformed"]["values"]) == 8
    q = report_data(read_run(qagen_output))
    assert q["kept_rows"] + q["discarded_rows"] == q["rows"] and q["discarded_rows"] > 0
    assert "wellformed-minilm" in q["wellformed"]["source"]


BROWSER = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
DRIVER = shutil.which("chromedriver")


@pytest.mark.skipif(not (BROWSER and DRIVER), reason="Chromium / chromedriver not installed "
                    "(Debian: apt-get install chromium chromium-driver)")
def test_report_in_headless_chromium_offline(fake_run, hostile, tmp_path):
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    out = tmp_path / "report.html"
    r = subprocess.run([sys.executable, "-m", "pysynth", "report", "--in", str(fake_run), "--out", str(out),
                        "--wellformed", "off"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    opts = webdriver.ChromeOptions()
    opts.binary_location = BROWSER
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1200,900",
                "--disable-extensions", "--no-first-run", "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>"):
        opts.add_argument(arg)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SE_OFFLINE", "true")
        drv = webdriver.Chrome(service=Service(executable_path=DRIVER), options=opts)
    try:
        drv.set_page_load_timeout(30)
        drv.execute_cdp_cmd("Network.enable", {})
        drv.execute_cdp_cmd("Network.emulateNetworkConditions", {"offline": True, "latency": 0,
                                                                 "downloadThroughput": -1, "uploadThroughput": -1})
        drv.get(out.as_uri())
        shots = Path(os.environ.get("PYSYNTH_SCREENSHOT_DIR") or tmp_path)
        shots.mkdir(parents=True, exist_ok=True)
        assert drv.save_screenshot(str(shots / "report.png"))
        assert drv.execute_script("return document.body.dataset.state") == "ready"  # the inline script ran
        assert drv.execute_script("return performance.getEntriesByType('resource').length") == 0
        assert drv.execute_script("return window.__xss === undefined && document.querySelectorAll('img').length") == 0
        assert len(drv.find_elements(By.CSS_SELECTOR, "svg rect.b")) > 5
        cells = [td.text for td in drv.find_elements(By.CSS_SELECTOR, "#kept tbody td")]
        assert hostile.strip() in cells  # the hostile question is shown as text
        box = drv.find_element(By.CSS_SELECTOR, "input[data-filter='#kept']")
        box.send_keys("colour")
        shown = [tr for tr in drv.find_elements(By.CSS_SELECTOR, "#kept tbody tr") if tr.is_displayed()]
        assert len(shown) == 1 and "what colour is the sky?" in shown[0].text
        assert drv.find_element(By.ID, "kept-n").text == "1 of 2 rows"
    finally:
        drv.quit()
