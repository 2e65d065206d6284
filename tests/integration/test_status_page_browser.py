"""The status page at `/` in a real browser (Debian's headless Chromium through chromedriver):
what a person sees, worst group first, the drill-down to partitions, the links to /metrics and
/healthz, the self-refresh, and nothing loaded from elsewhere. Once against the demo exactly as
`scripts/run` starts it (its three groups), once against the test stack with groups whose
values are known to the record.

``FT_STATUS_SCREENSHOT=path.png`` also saves the demo's overview (docs/usage.md's screenshot):

    FT_STATUS_SCREENSHOT=docs/img/status-page.png pytest -k demo \\
        tests/integration/test_status_page_browser.py
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from devstack import RealStack
from devstack.exporter import running_exporter
from devstack.exporter_config import stack_config
from devstack.stack import now_ms
from devstack.testing import unavailable
from devstack.workload import GROUP_KINDS
from freshness_tracker.config import load_settings
from freshness_tracker.metrics import GROUP_MAX_FRESHNESS
from tests.support.demo import FIRST_VALUES, running_demo
from tests.support.seeding import Commit, commit_all, seed_topic

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium for the module (chromedriver kills it on quit)."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        unavailable("selenium is not installed (the test extra: scripts/install test)")
    if not (shutil.which(CHROMIUM) and shutil.which(CHROMEDRIVER)):
        unavailable("Debian's chromium/chromium-driver are not installed (scripts/install)")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1280,900", "--disable-extensions", "--no-first-run"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def _wait(what: str, check: Callable[[], Any], timeout_s: float = 60) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.5)
    raise TimeoutError(f"timed out waiting for {what}")


def _rows(driver: Any, table: int) -> list[list[str]]:
    """The text of each body row's cells of the page's `table`-th table, as rendered, read in
    one script (the page reloads itself: element by element could straddle two documents)."""
    rows: list[list[str]] = driver.execute_script(
        "const t = document.querySelectorAll('table')[arguments[0]];"
        "return t ? [...t.querySelectorAll('tbody tr')].map("
        "  tr => [...tr.querySelectorAll('td')].map(td => td.innerText.trim())) : [];", table)
    return rows


def _click(driver: Any, link_text: str) -> None:
    """Click a link as a person does, again if the page reloaded itself under the click."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By

    for attempt in range(3):
        try:
            driver.find_element(By.LINK_TEXT, link_text).click()
            return
        except StaleElementReferenceException:
            if attempt == 2:
                raise


#: How the page writes a duration for a person: its two largest units, never raw milliseconds.
DURATION = re.compile(r"(\d+)ms|(\d+\.\d)s|(\d+)([dhm]) (\d+)([hms])")
_UNIT_MS = {"d": 86_400_000, "h": 3_600_000, "m": 60_000, "s": 1_000}


def _duration_ms(text: str) -> int:
    """'1m 5s' -> 65000 (to the smaller unit shown); fails on anything that is not a human
    duration."""
    match = DURATION.fullmatch(text)
    assert match, f"not a human duration: {text!r}"
    ms, secs, big, big_unit, small, small_unit = match.groups()
    if ms is not None:
        return int(ms)
    if secs is not None:
        return round(float(secs) * 1000)
    return int(big) * _UNIT_MS[big_unit] + int(small) * _UNIT_MS[small_unit]


def _assert_nothing_from_elsewhere(driver: Any, base: str) -> None:
    """Every resource the page loaded came from the exporter, and it has no script at all."""
    resources = driver.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)")
    assert all(r.startswith(base) for r in resources), resources  # no CDN
    sources = driver.execute_script(
        "return [...document.querySelectorAll('[src], link[href]')].map(e => e.src || e.href)")
    assert all(s.startswith(base) for s in sources), sources
    assert driver.execute_script("return document.scripts.length") == 0


def _body_text(driver: Any) -> str:
    return str(driver.execute_script("return document.body.innerText"))


def _save_screenshot(driver: Any, path: Path) -> None:
    """The page down to its last line, 1280 px wide: Chromium's own capture of the page
    (DevTools' Page.captureScreenshot), not of the window, so no scrollbar and no cut row."""
    bottom = driver.execute_script("return document.body.getBoundingClientRect().bottom")
    shot = driver.execute_cdp_cmd("Page.captureScreenshot", {
        "format": "png", "captureBeyondViewport": True,
        "clip": {"x": 0, "y": 0, "width": 1280, "height": int(bottom) + 20, "scale": 1}})
    path.write_bytes(base64.b64decode(shot["data"]))


def test_the_demo_at_a_glance(browser: Any, tmp_path: Path) -> None:
    """`scripts/run`'s demo, as a newcomer opens it: stuck above slow above keeps-up."""

    stuck, slow, keeps_up = "stuck", "slow", "keeps-up"
    assert set(GROUP_KINDS) == {stuck, slow, keeps_up}  # the demo's groups (devstack.workload)
    with running_demo(tmp_path) as demo:
        assert demo.read_until(lambda seen: any(s.startswith(FIRST_VALUES) for s in seen), 240), \
            demo.text[-3000:]
        base = f"http://127.0.0.1:{demo.port}"

        def overview() -> list[list[str]]:
            browser.get(base + "/")
            rows = _rows(browser, 1)
            every_group_measured = sorted(r[1] for r in rows) == sorted(GROUP_KINDS) and all(
                r[2] != "-" for r in rows)
            return rows if every_group_measured else []

        groups = _wait("the demo's three groups measured", overview, 60)
        assert [r[1] for r in groups] == [stuck, slow, keeps_up], groups  # worst first
        freshness = {r[1]: _duration_ms(r[2]) for r in groups}
        assert freshness[stuck] > freshness[slow] > freshness[keeps_up] == 0, groups
        lag = {r[1]: int(r[3]) for r in groups}
        assert lag[stuck] > 0 and lag[slow] > 0 and lag[keeps_up] == 0, groups
        assert all(r[0] == "local" and r[4] in ("OK", "WARN", "ERR") for r in groups), groups
        assert groups[2][4] == "OK" and groups[2][5:] == ["", ""], groups  # no loss, all measured

        [cluster] = _rows(browser, 0)
        assert cluster[:2] == ["local", "up"] and cluster[4:] == ["3", "9", ""], cluster
        last_success, cycle = cluster[2].removesuffix(" ago"), cluster[3]
        assert cluster[2].endswith(" ago") and _duration_ms(last_success) < 30_000, cluster
        assert _duration_ms(cycle) < 30_000, cluster  # cycles every 5 s
        assert "3 consumer groups, 2 with unconsumed data; 1 cluster, 0 down" in \
            _body_text(browser)
        _assert_nothing_from_elsewhere(browser, base)
        if os.environ.get("FT_STATUS_SCREENSHOT"):
            _save_screenshot(browser, Path(os.environ["FT_STATUS_SCREENSHOT"]))

        # it refreshes itself (every cycle: 5 s in the demo), with newer values
        assert browser.execute_script(
            "return document.querySelector('meta[http-equiv=refresh]').content") == "5"
        browser.execute_script("window.loadedBefore = true")
        _wait("the page to reload itself",
              lambda: browser.execute_script("return window.loadedBefore") is None, 30)
        _wait("a newer cycle on the page", lambda: [r for r in _rows(browser, 1)[:1]
                                                    if _duration_ms(r[2]) > freshness[stuck]], 30)

        # the drill-down: the stuck group's three partitions, worst first, 5 records committed
        _click(browser, stuck)
        assert browser.execute_script("return document.querySelector('h1').innerText") == stuck
        parts = _rows(browser, 0)
        assert sorted((r[0], r[1]) for r in parts) == [("demo-orders", str(p)) for p in range(3)]
        ages = [_duration_ms(r[4]) for r in parts]
        assert ages == sorted(ages, reverse=True) and min(ages) > 0, parts
        assert sum(int(r[2]) for r in parts) == 5, parts  # the workload's stuck_after
        assert all(int(r[3]) > 0 and r[7] == "" for r in parts), parts
        _click(browser, "Back to every group")
        assert [r[1] for r in _rows(browser, 1)] == [stuck, slow, keeps_up]

        # the links a person follows: /metrics has the same groups, /healthz says ok
        _click(browser, "/metrics")
        served = _body_text(browser)
        for group in GROUP_KINDS:
            assert re.search(rf"^{GROUP_MAX_FRESHNESS.name}\{{[^}}]*"
                             rf'consumer="{group}"', served, re.M), group
        browser.back()
        _click(browser, "/healthz")
        health = json.loads(_body_text(browser))
        assert health["status"] == "ok" and health["clusters"]["local"]["up"] is True, health

        code = demo.stop()
    assert code == 0 and "Traceback" not in demo.text, demo.text[-3000:]
    assert demo.survivors == []  # Kafka, Burrow: gone with the demo


def test_a_person_sees_the_worst_group_first_and_drills_down(
    stack: RealStack, browser: Any
) -> None:
    from selenium.webdriver.common.by import By

    prefix = f"page-{uuid.uuid4().hex[:6]}"
    t = now_ms()
    stuck = seed_topic(stack, f"{prefix}-orders", {0: [t - 600_000 + i * 1_000 for i in range(5)],
                                                   1: [t - 30_000 + i * 1_000 for i in range(3)]})
    fresh = seed_topic(stack, f"{prefix}-clicks", {0: [t - 5_000, t - 4_000]})
    commit_all(stack, [Commit(f"{prefix}-stuck", stuck, 0, 1),
                       Commit(f"{prefix}-stuck", stuck, 1, 3),
                       Commit(f"{prefix}-fresh", fresh, 0, 2)])
    settings = load_settings(text=stack_config(stack, f"{prefix}-.*", frequency_sec=1))
    with running_exporter(settings) as (_exporter, port):
        base = f"http://127.0.0.1:{port}"

        def overview() -> list[list[str]]:
            browser.get(base + "/")
            rows = _rows(browser, 1)
            return rows if len(rows) == 2 else []

        groups = _wait("both groups on the page", overview)
        # worst first: the stuck group (its oldest unconsumed record is ~10 minutes old)
        assert [r[1] for r in groups] == [f"{prefix}-stuck", f"{prefix}-fresh"], groups
        assert groups[0][2].startswith(("9m", "10m", "11m")), groups[0]
        assert groups[1][2] == "0ms", groups[1]
        _, lag = stack.burrow_get(f"/v3/kafka/{stack.cluster}/consumer/{prefix}-stuck/lag")
        assert groups[0][3] == "4", groups[0]  # offset lag: 4 + 0
        assert groups[0][4] == lag["status"]["status"], (groups[0], lag["status"])  # Burrow's
        clusters = _rows(browser, 0)
        assert clusters[0][:2] == [stack.cluster, "up"], clusters
        links = {a.get_attribute("href") for a in browser.find_elements(By.TAG_NAME, "a")}
        assert {base + "/metrics", base + "/healthz"} <= links
        _assert_nothing_from_elsewhere(browser, base)

        browser.find_element(By.LINK_TEXT, f"{prefix}-stuck").click()
        parts = _wait("the group's partitions", lambda: _rows(browser, 0))
        assert browser.find_element(By.TAG_NAME, "h1").text == f"{prefix}-stuck"
        assert [(r[0], r[1], r[3]) for r in parts] == [
            (stuck.name, "0", "4"), (stuck.name, "1", "0")], parts
        assert parts[0][4].startswith(("9m", "10m", "11m")) and parts[1][4] == "0ms", parts
