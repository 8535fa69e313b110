"""The keyword->question page of ``pysynth serve`` in a real headless Chromium (selenium).

Skips when selenium, Chromium or chromedriver is missing (``.ci/run`` installs Debian's
``chromium`` and ``chromium-driver`` when it can). Nothing is downloaded: the driver and the
browser are given by path, so selenium-manager never runs. ``PYSYNTH_SCREENSHOT_DIR`` keeps the
screenshot.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install selenium)")
pytest.importorskip("fastapi", reason="the [serve] extra is not installed")
pytest.importorskip("onnxruntime", reason="the [serve] extra is not installed")

from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.remote.webelement import WebElement  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from _server import Server  # noqa: E402

BROWSER = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
DRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(not (BROWSER and DRIVER), reason="Chromium / chromedriver not installed "
                                "(Debian: apt-get install chromium chromium-driver)")


@pytest.fixture(scope="module")
def server():
    with Server("--threads", "1") as s:
        yield s


@pytest.fixture(scope="module")
def browser():
    opts = webdriver.ChromeOptions()
    opts.binary_location = BROWSER
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1100,800", "--disable-extensions", "--no-first-run"):
        opts.add_argument(arg)
    with pytest.MonkeyPatch.context() as mp:  # belt and braces: selenium-manager must never go online
        mp.setenv("SE_OFFLINE", "true")
        drv = webdriver.Chrome(service=Service(executable_path=DRIVER), options=opts)
    try:
        drv.set_page_load_timeout(30)
        yield drv
    finally:
        drv.quit()


def _state(browser):
    return browser.execute_script("return document.body.dataset.state")


def _ask(browser, server, keywords: str) -> WebElement:
    browser.get(server.url + "/")
    box = browser.find_element(By.ID, "keywords")
    box.clear()
    if keywords:
        box.send_keys(keywords)
    browser.execute_script("delete document.body.dataset.state")
    browser.find_element(By.ID, "submit").click()
    return box


def test_type_keywords_and_read_the_questions(browser, server, tmp_path):
    browser.get(server.url + "/")
    # no external assets: every script, stylesheet and image comes from the server (or is inline)
    external = browser.execute_script("""
        return [...document.querySelectorAll('script[src], link[href], img[src]')].map(e => e.src || e.href)
            .filter(u => /^https?:/i.test(u) && new URL(u).origin !== location.origin);""")
    assert external == []
    _ask(browser, server, "honda crf 230 top speed")
    WebDriverWait(browser, 30).until(lambda d: _state(d) in ("done", "error"))
    # the screenshot first, so that a failing run leaves one to look at
    shots = Path(os.environ.get("PYSYNTH_SCREENSHOT_DIR") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    png = shots / "k2q_page.png"
    assert browser.save_screenshot(str(png))
    assert png.stat().st_size > 5000
    assert _state(browser) == "done", browser.find_element(By.ID, "error").text
    best = browser.find_element(By.ID, "best").text
    assert best.endswith("?") and "honda" in best, best
    alts = browser.execute_script(  # each item: the question's text node, then a span with its score
        "return [...document.querySelectorAll('#alternatives li')].map(li => li.firstChild.textContent)")
    assert len(alts) >= 1 and len(set(alts)) == len(alts) and best not in alts, (best, alts)
    assert browser.find_element(By.ID, "alternatives-box").is_displayed()
    assert " ms (model k2q-copynet-small, diverse search)" in browser.find_element(By.ID, "latency").text
    # the page shows what the API returns
    status, res = server.post("/v1/k2q", {"keywords": "honda crf 230 top speed", "n": 5, "diverse": True})
    assert status == 200 and [q["text"] for q in res["results"][0]["questions"]] == [best] + alts


def test_errors_are_shown_on_the_page(browser, server):
    _ask(browser, server, "")  # caught on the page: no request, no state
    WebDriverWait(browser, 10).until(lambda d: d.find_element(By.ID, "error").text)
    assert "Type some keywords" in browser.find_element(By.ID, "error").text
    assert _state(browser) is None
    _ask(browser, server, "zzqxv qqzzv")  # the server's 422 {"error": ...}, shown on the page
    WebDriverWait(browser, 30).until(lambda d: _state(d) in ("done", "error"))
    assert _state(browser) == "error"
    msg = browser.find_element(By.ID, "error").text
    assert "outside the model vocabulary" in msg
    assert browser.find_element(By.ID, "best").text == ""
    assert not browser.find_element(By.ID, "alternatives-box").is_displayed()
