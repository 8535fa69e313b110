"""Screenshot of a ``pysynth report`` page in headless Chromium, network off (docs/report.png).

    pysynth qagen generate --in sample --out triples.jsonl --keep-discarded
    pysynth report --in triples.jsonl --out report.html
    python tools/report_screenshot.py report.html docs/report.png [--height 2200]

Needs selenium, Chromium and chromedriver (Debian: ``apt-get install chromium chromium-driver``);
the driver is given by path, so nothing is downloaded.
"""
from __future__ import annotations

import argparse
import os
import shutil
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("page")
    ap.add_argument("png")
    ap.add_argument("--width", type=int, default=1200)
    ap.add_argument("--height", type=int, default=2200, help="the window's height: how much of the page is shown")
    a = ap.parse_args()
    os.environ["SE_OFFLINE"] = "true"  # selenium-manager never goes online
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = next(p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p)
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--hide-scrollbars",
                f"--window-size={a.width},{a.height}", "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>"):
        opts.add_argument(arg)
    drv = webdriver.Chrome(service=Service(executable_path=shutil.which("chromedriver")), options=opts)
    try:
        drv.execute_cdp_cmd("Network.enable", {})
        drv.execute_cdp_cmd("Network.emulateNetworkConditions", {"offline": True, "latency": 0,
                                                                 "downloadThroughput": -1, "uploadThroughput": -1})
        drv.get(Path(a.page).resolve().as_uri())
        assert drv.execute_script("return document.body.dataset.state") == "ready", "the page's script did not run"
        n = drv.execute_script("return performance.getEntriesByType('resource').length")
        assert n == 0, f"the page loaded {n} resources"
        drv.save_screenshot(a.png)
    finally:
        drv.quit()
    print(a.png)


if __name__ == "__main__":
    main()
