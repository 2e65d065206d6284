"""The status page at `/` in a real browser (Debian's headless Chromium through chromedriver),
against the real stack: what a person sees, worst group first, the drill-down to partitions, the
links to /metrics and /healthz, and nothing loaded from elsewhere.

``FT_STATUS_SCREENSHOT=path.png`` also saves the overview (the README's screenshot).
"""

from __future__ import annotations

import os
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from devstack import RealStack
from devstack.stack import now_ms
from freshness_tracker.config import load_settings
from tests.stack_support import in_ci
from tests.support.config import stack_config
from tests.support.exporter import running_exporter
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
        if in_ci():
            raise
        pytest.skip("selenium is not installed (the dev extra)")  # local only: CI raises
    if not (shutil.which(CHROMIUM) and shutil.which(CHROMEDRIVER)):
        if in_ci():
            raise RuntimeError("chromium and chromium-driver are not installed (scripts/install)")
        pytest.skip("Debian's chromium/chromium-driver are not installed")  # local only (CI)
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
    from selenium.webdriver.common.by import By

    tables = driver.find_elements(By.TAG_NAME, "table")
    if len(tables) <= table:
        return []
    return [[td.text for td in tr.find_elements(By.TAG_NAME, "td")]
            for tr in tables[table].find_elements(By.CSS_SELECTOR, "tbody tr")]


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
        resources = browser.execute_script(
            "return performance.getEntriesByType('resource').map(e => e.name)")
        assert all(r.startswith(base) for r in resources), resources  # no CDN, no script
        if os.environ.get("FT_STATUS_SCREENSHOT"):
            browser.save_screenshot(str(Path(os.environ["FT_STATUS_SCREENSHOT"])))

        browser.find_element(By.LINK_TEXT, f"{prefix}-stuck").click()
        parts = _wait("the group's partitions", lambda: _rows(browser, 0))
        assert browser.find_element(By.TAG_NAME, "h1").text == f"{prefix}-stuck"
        assert [(r[0], r[1], r[3]) for r in parts] == [
            (stuck.name, "0", "4"), (stuck.name, "1", "0")], parts
        assert parts[0][4].startswith(("9m", "10m", "11m")) and parts[1][4] == "0ms", parts
