"""`batchgate dashboard` in a real browser: headless Chromium from the Debian packages, driven by selenium.

The overview loads against the local cluster, a submitted AppWrapper appears and moves through
its phases without a reload, keyboard navigation reaches every panel of every page, and a
screenshot of each page is kept under test-artifacts/dashboard/ (gitignored). The browser is
part of the repository's set-up (`make .venv/.installed` installs it on CI), so this test fails
rather than skips when it is missing.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterator

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver

from controller.adapters.kube import RESOURCES, KubeClient
from dashboard.app import PAGES
from tests.controller.cluster import ROOT, eventually
from tests.dashboard.conftest import an_appwrapper

pytestmark = pytest.mark.timeout(180)
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
ARTIFACTS = ROOT / "test-artifacts" / "dashboard"


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    for binary in (CHROMIUM, CHROMEDRIVER):
        assert Path(binary).exists(), f"{binary} is missing: run `make .venv/.installed` (it apt-installs chromium)"
    profile = tempfile.mkdtemp(prefix="dashboard-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
                 "--window-size=1280,1000"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


def text(driver: WebDriver, selector: str) -> str:
    """Read in one script call: live updates replace the main region between two webdriver calls."""
    return str(driver.execute_script(
        "const e = document.querySelector(arguments[0]); return e ? e.textContent.trim() : '';", selector))


def phase_in_page(driver: WebDriver, ns: str, name: str) -> str:
    return text(driver, f'tr[data-appwrapper="{ns}/{name}"] td.phase')


def test_the_overview_loads_and_goes_live(browser: WebDriver, dashboard: Any) -> None:
    _, url = dashboard
    browser.get(url + "/")
    assert text(browser, "h1") == "Overview"
    eventually(lambda: "connected" in text(browser, "#connection"), timeout=15,
               what=lambda: text(browser, "#connection"))


def test_a_submitted_appwrapper_appears_and_moves_through_its_phases_without_a_reload(
        browser: WebDriver, dashboard: Any, live_client: KubeClient, team: dict[str, str]) -> None:
    _, url = dashboard
    browser.get(url + "/appwrappers")
    eventually(lambda: "connected" in text(browser, "#connection"), timeout=15)
    browser.execute_script("window.__notReloaded = true;")  # gone if the page reloads
    ns = team["ns"]
    live_client.create(RESOURCES["AppWrapper"], an_appwrapper(ns, "in-browser", run_for="4s"))
    seen: list[str] = []

    def progressed() -> bool:
        shown = phase_in_page(browser, ns, "in-browser")
        if shown and (not seen or seen[-1] != shown):
            seen.append(shown)
        return shown == "Succeeded"

    eventually(progressed, timeout=60, interval=0.1, what=lambda: f"Succeeded in the page; saw {seen}")
    assert "Running" in seen, seen
    assert browser.execute_script("return window.__notReloaded === true;"), "the page was reloaded"


@pytest.mark.parametrize("key, href", [(key, href) for key, href, _ in PAGES], ids=lambda v: str(v))
def test_keyboard_reaches_every_panel_and_a_screenshot_is_kept(browser: WebDriver, dashboard: Any,
                                                                team: dict[str, str], key: str, href: str) -> None:
    _, url = dashboard
    browser.get(url + href)
    panels = set(browser.execute_script("return [...document.querySelectorAll('section.panel')].map(e => e.id);"))
    assert panels, "every page has at least one panel"
    reached: set[str] = set()
    body = browser.find_element(By.TAG_NAME, "body")
    body.click()
    for _ in range(400):  # Tab through the page once: links, then panels; stop when focus wraps
        # To whatever has focus now: a live update may have swapped the element that had it.
        ActionChains(browser).send_keys(Keys.TAB).perform()
        focused = browser.execute_script(
            "const e = document.activeElement; return e && e.tagName === 'SECTION' ? e.id : '';")
        if focused:
            reached.add(focused)
        if reached == panels:
            break
    assert reached == panels
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    assert browser.save_screenshot(str(ARTIFACTS / f"{key}.png"))


def test_an_appwrapper_page_shows_its_story_and_is_kept_as_a_screenshot(
        browser: WebDriver, dashboard: Any, live_client: KubeClient, team: dict[str, str]) -> None:
    hub, url = dashboard
    live_client.create(RESOURCES["AppWrapper"], an_appwrapper(team["ns"], "story", run_for="30s"))
    eventually(lambda: any(r.name == "story" and r.phase == "Running" for r in hub.published.digest.appwrappers),
               timeout=40, what="the AppWrapper to run")
    browser.get(f"{url}/appwrappers/{team['ns']}/story")
    assert text(browser, "h1") == f"AppWrapper {team['ns']}/story"
    eventually(lambda: "gpu-node" in text(browser, "#panel-aw-components"), timeout=20,
               what="its pods with their nodes")
    assert "QuotaReserved=True" in text(browser, "#panel-aw-timeline")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    assert browser.save_screenshot(str(ARTIFACTS / "appwrapper.png"))
