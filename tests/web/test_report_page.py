"""`autoretto report` in a real browser (Playwright, headless Chromium): what a person sees of
the seeded week of tests/test_report.py without hovering anything, read from the DOM the
browser built, the boxes it laid out and the screenshot it drew.

- what went wrong is a list beside the calendar, each entry linked to its slot's cell;
- the first day column holds that day's slots (the days are whole days);
- the numbers of the releases table sit under their headers (right edges aligned);
- a slot whose post went out, on any platform, is drawn as posted, never as failed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PIL import Image

from autoretto.report import render
from tests.test_report import seed
from tests.web.conftest import screenshot

POSTED_GREEN = (0x30, 0xA4, 0x6C)
FAILED_RED = (0xE5, 0x48, 0x4D)


#: where the first line of text in an element ends, in the page's pixels
TEXT_RIGHT = """cell => {
  const text = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT).nextNode();
  const range = document.createRange();
  range.selectNodeContents(text);
  return range.getBoundingClientRect().right;
}"""


def _box(element: Any) -> dict[str, float]:
    box = element.bounding_box()
    assert box is not None, "the element is not drawn"
    return box


def _colour_at(image: Image.Image, box: dict[str, float]) -> tuple[int, int, int]:
    return image.getpixel((int(box["x"] + box["width"] / 2), int(box["y"] + box["height"] / 2)))


def _near(colour: tuple[int, ...], wanted: tuple[int, int, int]) -> bool:
    return sum(abs(a - b) for a, b in zip(colour, wanted, strict=True)) < 20


def test_the_report_reads_without_hovering(browsers, home: Path) -> None:
    config, db, now = seed(home)
    report = home / "report.html"
    report.write_text(render(config, db, now, days=7), encoding="utf-8")
    page = browsers.open()
    page.set_viewport_size({"width": 1360, "height": 1000})
    page.goto(report.as_uri())
    # Boxes are measured at the top of the page, where they match the full-page screenshot.
    picture = Image.open(screenshot(page, "report")).convert("RGB")

    lofi = page.locator('section[data-channel="lofi"]')
    calendar = _box(lofi.locator(".calendar"))
    wrong = lofi.locator("aside.wrong")
    # The list of what went wrong is on the page, beside the calendar (not under a tooltip).
    assert wrong.is_visible()
    aside = _box(wrong)
    assert aside["x"] >= calendar["x"] + calendar["width"]
    assert aside["y"] < calendar["y"] + calendar["height"]
    entries = wrong.locator("li[data-wrong]")
    assert entries.count() == 4  # a mixed slot, nothing ready, a refusal, a miss
    texts = wrong.inner_text()
    assert "youtube: failed - YouTube could not be reached (ConnectTimeout)" in texts
    assert "missed - found 9h after its time, outside the 6h window" in texts
    # Each entry links to its own cell; following the link marks that cell.
    for n in range(entries.count()):
        entry = entries.nth(n)
        target = entry.locator("a").get_attribute("href")
        cell = page.locator(f"[id='{target[1:]}']")
        assert cell.get_attribute("data-slot") == entry.get_attribute("data-wrong")
    # The first day column (Sunday 22 November, lofi's zone UTC) holds both of its slots.
    first_day = _box(lofi.locator(".calendar .day").first)
    column = [
        _box(cell)
        for cell in lofi.locator(".calendar .slot").all()
        if abs(_box(cell)["x"] - first_day["x"]) < 1
    ]
    assert len(column) == 2

    # A slot that went out on Bluesky while YouTube failed is drawn green, not red.
    mixed = lofi.locator('[data-slot="2026-11-24T18:00"].slot')
    assert mixed.get_attribute("data-state") == "posted"
    assert _near(_colour_at(picture, _box(mixed)), POSTED_GREEN)
    failed = page.locator('section[data-channel="jazz"] [data-slot="2026-11-26T09:30"].slot')
    assert _near(_colour_at(picture, _box(failed)), FAILED_RED)
    for cell in page.locator(".calendar .slot[data-state='failed']").all():
        assert ": posted" not in (cell.get_attribute("title") or "")

    # Every number of the releases table ends where its header's word ends.
    table = lofi.locator("table.releases")
    headers = table.locator("thead th")
    names = [headers.nth(n).inner_text() for n in range(headers.count())]
    for name in ("views", "likes", "comments", "reposts"):
        index = names.index(name)
        header_end = headers.nth(index).evaluate(TEXT_RIGHT)
        for row in table.locator("tbody tr").all():
            assert abs(row.locator("td").nth(index).evaluate(TEXT_RIGHT) - header_end) < 1.5, name

    # Following an entry's link marks its cell.
    link = entries.first.locator("a")
    link.click()
    assert page.evaluate("location.hash") == link.get_attribute("href")
    assert page.locator(":target").get_attribute("id") == link.get_attribute("href")[1:]
