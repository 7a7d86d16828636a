"""The page in a real browser, as a person uses it: headless Chromium (Debian's
``chromium`` and ``chromium-driver``, driven by selenium; ``make
chromium-bin`` installs them as root) loads ``mfu-tracker view`` while a real
Tracker training loop writes its log in another process, reads the numbers
the page shows, checks each against the log line the page names, opens a
formula, and watches the page follow the run without a reload. Screenshots go
to build/view/ (``view-live.png``, the first screen, is docs/view.png: ``make
docs-view``).

OFU and the ladder are checked on a log the fake NVML wrote (the hardware
counters of a Hopper GPU, scripted). Skipped, saying why, where Chromium, its
driver or selenium is missing.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, Optional

import pytest
from _view_train import gpm_log

ROOT = Path(__file__).resolve().parent.parent
SHOTS = ROOT / "build" / "view"
BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def _browser() -> Optional[str]:
    return next((shutil.which(name) for name in BROWSERS if shutil.which(name)), None)


def _missing() -> Optional[str]:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (the [test] extra)"
    if _browser() is None:
        return "no Chromium (Debian: apt-get install chromium; make chromium-bin does it as root)"
    if shutil.which("chromedriver") is None:
        return "no chromedriver (Debian: apt-get install chromium-driver)"
    return None


pytestmark = pytest.mark.skipif(_missing() is not None, reason=str(_missing()))


@pytest.fixture
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1280,1000", "--no-first-run", "--disable-extensions"):
        options.add_argument(flag)
    options.binary_location = _browser()
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def _wait(driver, predicate, timeout=120.0, what=""):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout, poll_frequency=0.25).until(
        lambda d: predicate(d), message=what)


def _lines(driver) -> int:
    return int(driver.find_element("tag name", "body").get_attribute("data-lines") or 0)


def _figure(driver, path: str) -> Dict[str, Any]:
    """What the page shows for figure ``path``: its text, exact value, how, source."""
    node = driver.find_element("css selector", f'[data-fig="{path}"]')
    source = node.find_elements("css selector", ":scope > details .source")
    return {"text": node.find_element("css selector", ":scope > .value").text,
            "value": node.get_attribute("data-value"), "how": node.get_attribute("data-how"),
            "source": source[0].get_attribute("textContent") if source else ""}


def _shown(text: str) -> float:
    """A number as the page prints it ("0.3154%", "143.6 ms", "1782 tokens/s") in the
    figure's base unit."""
    number = float(re.match(r"-?[\d.]+(e-?\d+)?", text).group(0))
    if text.endswith("%"):
        return number / 100
    if text.endswith(" ms"):
        return number / 1e3
    return number


def _line_of(path: str, source: str) -> Dict[str, Any]:
    """The log line a figure's source names ("from the log: line 7 (step 12): key")."""
    number = int(re.search(r"line (\d+)", source).group(1))
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            if i == number:
                return json.loads(line)
    raise AssertionError(f"{path} has no line {number}")


def _check_against_the_log(driver, log: str, path: str, key: str) -> Dict[str, Any]:
    shown = _figure(driver, path)
    record = _line_of(log, shown["source"])
    assert float(shown["value"]) == record[key], (path, shown, record[key])
    # printed to 4 significant digits
    assert _shown(shown["text"]) == pytest.approx(record[key], rel=5e-4), (path, shown)
    return shown


def _screenshot(driver, name: str, height: int = 0) -> Path:
    """The page, ``height`` pixels of it from the top (0: all of it)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    height = height or driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1280, min(max(int(height), 800), 6000))
    out = SHOTS / name
    assert driver.save_screenshot(str(out))
    driver.set_window_size(1280, 1000)
    return out


def _start_view(log: str, *flags: str):
    proc = subprocess.Popen([sys.executable, "-m", "mfu_tracker", "view", log, *flags],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    line = proc.stdout.readline()
    found = re.search(r"at (http://127\.0\.0\.1:\d+/)", line)
    assert found, (line, proc.stderr.read() if proc.poll() is not None else "")
    return proc, found.group(1)


def test_the_page_follows_a_live_cpu_training_run(browser, tmp_path):
    log = str(tmp_path / "metrics.jsonl")
    trainer = subprocess.Popen([sys.executable, str(ROOT / "tests" / "_view_train.py"), log,
                                "--steps", "40", "--log-every", "2", "--pause", "0.25"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    view, url = _start_view(log, "--budget-steps", "40")
    try:
        browser.get(url)                    # before the first line: the page waits
        _wait(browser, lambda d: _lines(d) >= 2, what="two metrics lines on the page")
        first = _lines(browser)
        assert trainer.poll() is None, "the run finished before the page was read live"
        # the formula of MFU, opened as a person would (and kept open across updates)
        browser.find_element("css selector", '[data-fig="head.mfu"] > details > summary').click()
        formula = browser.find_element("css selector", '[data-fig="head.mfu"] > details .formula')
        assert "model FLOPs per step / step time" in formula.text
        mfu = _check_against_the_log(browser, log, "head.mfu", "throughput/mfu")
        assert mfu["how"] == "derived"
        _check_against_the_log(browser, log, "head.tokens_per_sec", "throughput/tokens_per_sec")
        _check_against_the_log(browser, log, "head.step_time_s", "throughput/step_time_s")
        denominator = browser.find_element("id", "mfu-denominator").text
        assert "ours, exact (FLOPs counted)" in denominator and "0.05 TFLOP/s" in denominator
        assert "Megatron-LM" in browser.find_element("id", "convention-range").text or \
            browser.find_element("css selector", '[data-fig="conventions.mfu_megatron"]')
        _screenshot(browser, "view-live-early.png")
        # live: more lines arrive and the page shows them with no reload
        _wait(browser, lambda d: _lines(d) >= first + 3, what="the page following the run")
        assert browser.find_element("css selector", '[data-fig="head.mfu"] > details').get_attribute(
            "open") is not None
        mfu_later = _check_against_the_log(browser, log, "head.mfu", "throughput/mfu")
        assert mfu_later["source"] != mfu["source"]
        done = _figure(browser, "progress.fraction_done")
        step = _line_of(log, _figure(browser, "progress.steps_done")["source"])["step"]
        assert float(done["value"]) == step / 40
        trainer.wait(timeout=600)
        _wait(browser, lambda d: "ended" in d.find_element("id", "status").text,
              what="the run-end record on the page")
        _check_against_the_log(browser, log, "head.mfu", "throughput/mfu")
        assert _lines(browser) == 20
        goodput = _figure(browser, "ledger.goodput")
        assert goodput["how"] == "derived" and 0 < float(goodput["value"]) < 1
        _screenshot(browser, "view-live-full.png")
        browser.execute_script("window.scrollTo(0, 0)")
        _screenshot(browser, "view-live.png", height=1500)       # docs/view.png
    finally:
        view.send_signal(signal.SIGTERM)
        view.communicate(timeout=60)
        if trainer.poll() is None:
            trainer.kill()
        trainer.communicate(timeout=60)
    assert view.returncode == 0 and trainer.returncode == 0


@pytest.fixture
def nvml(monkeypatch):
    from _fake_nvml import fake_nvml

    fake = fake_nvml(monkeypatch)
    yield fake
    fake.lib.fake_nvml_reset()


def test_the_ladder_and_ofu_beside_mfu_on_the_fake_nvml(browser, fake, nvml, tmp_path,
                                                      monkeypatch):
    from mfu_tracker.cli.view import serve

    nvml.script_gpm(62.5, 31.0, sm_pct=88.0, gpu_pct=97.0)
    log = tmp_path / "gpm.jsonl"
    gpm_log(fake, log, monkeypatch)
    with serve(str(log)) as server:
        browser.get(server.url)
        _wait(browser, lambda d: _lines(d) >= 2, what="the log on the page")
        rungs = [_figure(browser, f"ladder.{name}") for name in
                 ("hw/gpu_busy", "hw/sm_active", "hw/tensor_active", "mfu")]
        assert [r["text"] for r in rungs] == ["97%", "88%", "62.5%", "50%"]
        assert [r["how"] for r in rungs] == ["measured"] * 3 + ["derived"]
        assert _figure(browser, "ladder.ofu")["text"] == "62.5%"
        assert _figure(browser, "head.mfu")["text"] == "50%"
        assert _figure(browser, "ladder.self_check")["text"] == "80%"      # 0.5 / 0.625
        assert "within" in browser.find_element("id", "self-check-verdict").text
        assert "OFU" in browser.find_element("id", "charts").text
        time.sleep(0.5)
        _screenshot(browser, "view-ladder.png")
