"""The web page end to end: a real `klent serve` and headless Chromium (Debian's, via Playwright).

Loads the page, plays a move in 9x9 Go and in chess, and waits for the engine's reply and its
analysis.  Screenshots go to the test-artifacts folder for people to look at.
"""

from __future__ import annotations

import os
import shutil

import pytest

from klent.bench.server import running_server

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]


@pytest.fixture(scope="module")
def server(untrained_model, tmp_path_factory):
    folder = tmp_path_factory.mktemp("web-models")
    shutil.copy(untrained_model("go9"), folder / "go9.onnx")
    shutil.copy(untrained_model("chess"), folder / "chess.onnx")
    with running_server(folder) as process:
        yield process


@pytest.fixture(scope="module")
def page(server):
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} not found; install Debian's chromium (apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1100, "height": 720})
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(server.url + "/")
        yield page
        browser.close()
        assert not errors, f"JavaScript errors on the page: {errors}"


def test_play_go_against_the_engine(page, artifacts_dir):
    page.wait_for_selector("#status:has-text('Your move')")
    assert page.input_value("#game") == "go9"
    page.click("rect[data-vertex='E5']")
    page.wait_for_function("document.querySelectorAll('#moves li').length === 2")
    moves = page.locator("#moves li").all_inner_texts()
    assert moves[0] == "E5" and moves[1] != "E5"
    assert page.locator("circle.stone-black").count() == 1
    assert page.locator("circle.stone-white").count() == (0 if moves[1] == "pass" else 1)
    assert page.locator("#top-moves tbody tr").count() == 8
    assert "Engine played" in page.inner_text("#status") and "value" in page.inner_text("#eval-text")
    page.screenshot(path=os.path.join(artifacts_dir, "web-go9.png"))

    # An illegal move (an occupied point) is refused on the page, without a request.
    page.click("rect[data-vertex='E5']")
    page.wait_for_selector("#status.error:has-text('Illegal move')")


def test_play_chess_with_search(page, artifacts_dir):
    page.select_option("#game", "chess")
    page.select_option("#mode", "search")
    page.fill("#simulations", "32")
    page.click("#new-game")
    page.wait_for_selector("#status:has-text('Your move (White)')")
    page.click("[data-square='e2']")
    assert page.locator(".square.target").count() == 2  # e3 and e4
    page.click("[data-square='e4']")
    page.wait_for_function("document.querySelectorAll('#moves li').length === 2")
    assert page.locator("#moves li").first.inner_text() == "e2e4"
    assert "32 simulations" in page.inner_text("#eval-text")
    assert page.locator("[data-square='e4'] .piece-white").count() == 1
    page.screenshot(path=os.path.join(artifacts_dir, "web-chess.png"))


def test_territory_shading_from_the_ownership_head(page, ownership_model, tmp_path, artifacts_dir):
    """The model says Black owns columns A-E: with "Territory" ticked, 45 black and 36 white
    squares, and the predicted result under the analysis."""
    shutil.copy(ownership_model, tmp_path / "go9.onnx")
    with running_server(tmp_path) as process:
        page.goto(process.url + "/")  # the last test of the module: the page may leave
        page.wait_for_selector("#status:has-text('Your move')")
        assert page.is_visible("#territory-label")
        page.check("#territory")
        page.wait_for_function("document.querySelectorAll('rect.owner-black').length === 45")
        assert page.locator("rect.owner-white").count() == 36
        assert "Predicted result:" in page.inner_text("#territory-score")
        page.screenshot(path=os.path.join(artifacts_dir, "web-go9-territory.png"))


def test_a_19x19_game_with_the_territory_overlay(page, tmp_path, artifacts_dir):
    """The shipped Go model with board heads serves 19x19: the page draws the big board, plays on
    it and shades the ownership head's territory over all of it."""
    from klent.engine.player import DEFAULT_WEIGHTS_DIR

    shutil.copy(DEFAULT_WEIGHTS_DIR / "go19.onnx", tmp_path / "go19.onnx")
    with running_server(tmp_path) as process:
        page.goto(process.url + "/")
        page.wait_for_selector("#status:has-text('Your move')")
        assert page.input_value("#game") == "go19"
        assert page.locator("rect.go-point").count() == 361
        page.click("rect[data-vertex='Q16']")
        page.wait_for_function("document.querySelectorAll('#moves li').length === 2")
        assert page.locator("#moves li").first.inner_text() == "Q16"
        page.check("#territory")
        page.wait_for_function("document.querySelectorAll('rect.owner-black, rect.owner-white').length > 0")
        assert page.locator("rect.owner-black, rect.owner-white").count() <= 361
        assert "Predicted result:" in page.inner_text("#territory-score")
        page.screenshot(path=os.path.join(artifacts_dir, "web-go19.png"))
