"""The dashboard in a real browser: Debian's chromium driven by playwright (no download).

Skipped when /usr/bin/chromium or playwright is missing; `.ci/run` installs both.
"""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

if not CHROMIUM.exists():
    pytest.skip("no /usr/bin/chromium (apt-get install chromium)", allow_module_level=True)
playwright = pytest.importorskip("playwright.sync_api", reason="pip install playwright")


@pytest.fixture
def server(store, root):
    import uvicorn

    from hpn.web import create_app

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    srv = uvicorn.Server(
        uvicorn.Config(create_app(root), host="127.0.0.1", port=port, log_level="warning")
    )
    t = threading.Thread(target=srv.run, daemon=True)
    t.start()
    deadline = time.time() + 10
    while not srv.started and time.time() < deadline:
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}"
    srv.should_exit = True
    t.join(5)


@pytest.fixture
def page(server):
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        pg = browser.new_page()
        pg.set_default_timeout(15_000)
        errors: list[str] = []
        pg.on("pageerror", lambda e: errors.append(str(e)))
        yield pg
        browser.close()
        assert not errors, errors


def test_fabric_then_run_then_comparison(page, server, store):
    traffic, hpn, dcn = store["traffic"].id, store["hpn"].id, store["dcn"].id
    # fabric explorer over the traffic run: click a ToR, see its ports and their utilization
    page.goto(f"{server}/fabric?run={traffic}")
    page.wait_for_selector("#fabric svg .sw.tor")
    assert "16 ToRs, 136 hosts (8 backup)" in page.inner_text("#counts")
    tor = page.locator("#fabric .sw.tor").first
    label = tor.get_attribute("data-label")
    tor.click()
    page.wait_for_selector("#switch-name")
    assert page.inner_text("#switch-name") == label == "pod0/seg0/tor-r0-p0"
    assert page.locator("table.ports tbody tr").count() == 2 * (136 + 60)
    assert "%" in page.locator("table.ports td.util").first.inner_text()
    page.select_option("#segment", "3")
    page.wait_for_function("document.querySelector('#counts').textContent.endsWith('segment 3')")
    page.locator("#fabric .sw.agg").first.click()
    page.wait_for_function("document.querySelector('#switch-name').textContent.includes('agg')")
    # the pod view: every segment at once; a ToR's ports, then a segment box opens that segment
    page.click("#view-pod")
    page.wait_for_selector("#fabric[data-view='pod'] .segbox")
    assert "240 ToRs in 15 segments, 2040 hosts (120 backup)" in page.inner_text("#counts")
    assert page.locator("#fabric .segbox").count() == 15
    page.locator("#fabric .sw.tor[data-label='pod0/seg4/tor-r1-p1']").click()
    page.wait_for_function(
        "document.querySelector('#switch-name').textContent === 'pod0/seg4/tor-r1-p1'"
    )
    assert page.locator("table.ports tbody tr").count() == 2 * (136 + 60)
    assert "%" in page.locator("table.ports td.util").first.inner_text()
    page.locator("#fabric .segbox[data-segment='5']").click()
    page.wait_for_function("document.querySelector('#counts').textContent.endsWith('segment 5')")
    assert page.locator("#fabric .host").count() == 136
    assert page.input_value("#segment") == "5"
    # the runs list -> a run page with its plots drawn
    page.goto(server)
    page.click(f"a.run:text('{traffic}')")
    page.wait_for_selector(".chart[data-ready='1'] .main-svg")
    assert page.locator(".chart").count() == 2
    assert "makespan_s" in page.inner_text("table.figures")
    # back to the list, pick two runs, compare them
    page.goto(server)
    page.check(f".pick[value='{hpn}']")
    page.check(f".pick[value='{dcn}']")
    page.click("#compare-btn")
    page.wait_for_url("**/compare?**")
    diff = page.inner_text("table.config-diff")
    assert "fabric.preset" in diff and "dcn-plus" in diff
    figures = page.inner_text("table.figures")
    assert "15360" in figures and "512" in figures
    page.wait_for_selector(".chart[data-ready='1']")


def test_start_a_run_from_the_form(page, server):
    page.goto(f"{server}/new")
    page.wait_for_function("document.querySelector('#config').value.includes('preset')")
    page.fill("#config", '[fabric]\npreset = "fat-tree"\nk = 6\n')
    page.click("button[type=submit]")
    page.click("#new-run-link")
    page.wait_for_selector("table.figures")
    assert "54" in page.inner_text("table.figures")  # k=6 fat tree: k^3/4 hosts
    page.goto(f"{server}/new")
    page.wait_for_function("document.querySelector('#config').value.includes('preset')")
    page.fill("#config", "[fabric]\npods = 99\n")
    page.click("button[type=submit]")
    page.wait_for_selector(".status.error")
    assert "fabric.pods" in page.inner_text(".status.error")
