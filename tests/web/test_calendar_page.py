"""The calendar, the queue and the editor in headless Chromium, at a desktop's 1400 pixels and a
phone's 375: every slot shows its episode's thumbnail, title and state and opens it; today's
header is readable; the queue shows which episode goes out on which coming slot; a title edited
on the page is on the calendar; and nothing on the phone is wider than the phone. Screenshots
are kept as test-artifacts/web-calendar-*.png."""

from __future__ import annotations

from PIL import Image

from tests.support import channel_toml, run_sql, write_config
from tests.web.conftest import screenshot, sign_in

LONG_TITLE = "A very long title that goes on and on: Rainy-night-lofi-beats-to-study-and-relax-to"

#: the WCAG contrast ratio of an element's text colour on its background
CONTRAST = """element => {
  const style = getComputedStyle(element);
  const rgb = text => text.match(/[\\d.]+/g).slice(0, 3).map(Number);
  const luminance = ([r, g, b]) => {
    const channel = value => {
      const c = value / 255;
      return c <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4);
    };
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b);
  };
  const background = style.backgroundColor;
  if (background === "rgba(0, 0, 0, 0)" || background === "transparent") { return 0; }
  const one = luminance(rgb(style.color)), two = luminance(rgb(background));
  return (Math.max(one, two) + 0.05) / (Math.min(one, two) + 0.05);
}"""
WIDTH = "document.scrollingElement.scrollWidth"
#: where each drawn element is across the viewport: [x, width] (as Playwright's bounding_box)
BOXES = """elements => elements.filter(e => e.getClientRects().length > 0).map(e => {
  const box = e.getBoundingClientRect();
  return [box.x, box.width];
})"""


def make_home(home, cli, clip) -> None:
    write_config(home, channel_toml("lofi", slots=("10:00", "19:00")))
    assert cli("init")[0] == 0
    titles = ["Rain on glass", LONG_TITLE, "Night bus", "Blue hour"]
    for title in titles:
        code, _, err = cli("episode", "add", "lofi", str(clip), "--title", title)
        assert code == 0, err
    cli("run-due", now="2026-11-29T09:00:00Z")  # the channel is seen; nothing is due
    # Each episode's thumbnail, as the pipeline leaves one (imports have none of their own).
    for number, colour in enumerate(["#c2410c", "#1d4ed8", "#15803d", "#7e22ce"], start=1):
        picture = home / f"thumb-{number}.png"
        Image.new("RGB", (320, 180), colour).save(picture)
        run_sql(home, f"UPDATE episodes SET thumbnail = '{picture}' WHERE id = {number}")
    # The 10:00 slot of today (Sunday 29 November) posts episode 1.
    assert cli("run-due", now="2026-11-29T10:00:30Z")[0] == 0


def check_cards(page, *, view: str) -> None:
    cards = page.locator("section[data-channel='lofi'] .slotcard[data-episode]")
    assert cards.count() >= 4
    for n in range(cards.count()):
        card = cards.nth(n)
        if not card.is_visible():  # a day of the month before or after, left out on a phone
            continue
        image = card.locator("img.thumb")
        assert image.count() == 1
        assert image.evaluate("img => img.complete && img.naturalWidth > 0"), "not drawn"
        title = card.locator(".title")
        assert title.is_visible() and title.inner_text().strip()
        assert card.locator(".words").inner_text().strip()  # the state, in words
        assert (
            card.locator("a").get_attribute("href")
            == f"/episodes/{card.get_attribute('data-episode')}"
        )


def test_the_calendar_on_a_desktop_and_a_phone(home, cli, clip, served, shared_browsers):
    make_home(home, cli, clip)
    server = served()
    page = shared_browsers.open()
    page.set_viewport_size({"width": 1400, "height": 1000})
    sign_in(page, server)

    # The week: today's 10:00 went out with episode 1; the coming slots take 2, 3, 4 in order.
    lofi = page.locator("section[data-channel='lofi']")
    posted = lofi.locator(".slotcard[data-slot='2026-11-29T10:00']")
    assert posted.get_attribute("data-state") == "posted"
    assert posted.get_attribute("data-episode") == "1"
    assert "Rain on glass" in posted.inner_text()
    check_cards(page, view="week")
    queue = lofi.locator("ol.queue > li")
    assert [queue.nth(n).get_attribute("data-episode") for n in range(3)] == ["2", "3", "4"]
    assert queue.first.get_attribute("data-slot") == "2026-11-29T19:00"
    today = lofi.locator(".day-head.today")
    assert today.count() == 1 and "29" in today.inner_text()
    assert today.evaluate(CONTRAST) >= 4.5
    assert page.evaluate(WIDTH) <= 1400
    screenshot(page, "calendar-week-1400")

    # A card opens its episode.
    lofi.locator(".slotcard[data-slot='2026-11-29T19:00'] a").click()
    page.wait_for_url(f"{server.url}/episodes/2")
    assert LONG_TITLE in page.inner_text("h2")

    page.goto(f"{server.url}/?view=month")
    check_cards(page, view="month")
    assert page.locator("section[data-channel='lofi'] .day-head.today").evaluate(CONTRAST) >= 4.5
    screenshot(page, "calendar-month-1400")

    # The phone: one column, nothing cut off, nothing to scroll sideways.
    page.set_viewport_size({"width": 375, "height": 812})
    for address, name in (
        ("/", "calendar-week-375"),
        ("/?view=month", "calendar-month-375"),
        ("/episodes/2", "episode-375"),
        ("/episodes/2/edit", "edit-375"),
    ):
        page.goto(f"{server.url}{address}")
        assert page.evaluate(WIDTH) <= 375, address
        if address.startswith("/?") or address == "/":
            check_cards(page, view="month" if "month" in address else "week")
            today = page.locator("section[data-channel='lofi'] .day-head.today")
            assert today.is_visible() and today.evaluate(CONTRAST) >= 4.5
            # every card drawn (a day outside the month is not, on a phone), read in one go
            for x, width in page.locator(".slotcard").evaluate_all(BOXES):
                assert x >= 0 and x + width <= 375
        screenshot(page, name)


def test_a_title_edited_on_the_page_is_on_the_calendar(home, cli, clip, served, shared_browsers):
    make_home(home, cli, clip)
    server = served()
    page = shared_browsers.open()
    page.set_viewport_size({"width": 1400, "height": 1000})
    sign_in(page, server)
    page.goto(f"{server.url}/episodes/3")
    page.click("a:has-text('Edit texts')")
    page.wait_for_url(f"{server.url}/episodes/3/edit")
    page.fill("input[name='title']", "Night bus, last stop")
    page.click("button:has-text('Save')")
    page.wait_for_url(f"{server.url}/episodes/3")
    assert "Night bus, last stop" in page.inner_text("h2")
    assert "Episode 3: 1 text changed; the gates passed." in page.inner_text("main")
    assert cli.json("episode", "show", "3")["title"] == "Night bus, last stop"
    page.goto(f"{server.url}/")
    card = page.locator("section[data-channel='lofi'] .slotcard[data-episode='3']").first
    assert "Night bus, last stop" in card.inner_text()

    # Episode 1 went out on folder: its folder text is kept, said so, and cannot be changed.
    page.goto(f"{server.url}/episodes/1/edit")
    kept = page.locator("fieldset[data-platform='folder']")
    assert kept.get_attribute("disabled") is not None
    assert kept.locator("textarea").first.is_disabled()
    assert "Kept as it is: its post 1 is published" in kept.inner_text()
    # Swap 3 and 4 from the queue: the slots change hands.
    page.goto(f"{server.url}/")
    row = page.locator("ol.queue > li[data-episode='3']")
    row.locator("select[name='with']").select_option("4")
    row.locator("button:has-text('Swap')").click()
    page.wait_for_url(f"{server.url}/")
    assert "Episodes 3 and 4 swapped places" in page.inner_text("main")
    queue = page.locator("ol.queue > li")
    assert [queue.nth(n).get_attribute("data-episode") for n in range(3)] == ["2", "4", "3"]
    screenshot(page, "calendar-after-swap")
