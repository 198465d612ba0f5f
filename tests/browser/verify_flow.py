#!/usr/bin/env python3
"""Vigie public verification in a real browser: no login, the in-browser WebCrypto recomputation against the server.

For each game id given, opens /verify, types the id, waits for the page's own
recomputation (static/verify.js) and checks that it agrees with the server:
same verdict, every recomputed value filled in, the expected verdict when one
is given (`ID=pass` or `ID=fail`). Screenshots go to --screenshots.

    python3 tests/browser/verify_flow.py --base-url http://127.0.0.1:8088 \
        --game lu-b992-000003=pass --game be-b992-000009=pass --game lu-b992-000024=fail

CHROME_BIN and CHROMEDRIVER override /usr/bin/chromium and /usr/bin/chromedriver.
Exits non-zero on the first failed check.
"""

import argparse
import os
import sys
import tempfile

try:
    from selenium.webdriver.common.by import By
except ImportError:  # pragma: no cover - reported clearly to the caller
    print("selenium is not installed: python3 -m pip install selenium", file=sys.stderr)
    sys.exit(3)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from review_flow import browser, check, shot, wait, PASSED  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--base-url", required=True)
    p.add_argument("--game", action="append", required=True, help="ID or ID=pass|fail")
    p.add_argument("--screenshots", default="target/screenshots")
    a = p.parse_args()
    base = a.base_url.rstrip("/")
    with tempfile.TemporaryDirectory(prefix="vigie-chrome-") as profile:
        d = browser(profile)
        try:
            for n, spec in enumerate(a.game, start=1):
                game, _, expected = spec.partition("=")
                d.get(base + "/verify")
                check("/login" not in d.current_url, f"/verify opens without login ({game})")
                box = d.find_element(By.ID, "verify-id")
                box.clear()
                box.send_keys(game)
                d.find_element(By.CSS_SELECTOR, "#verify-form button[type=submit]").click()
                wait(d).until(lambda x: x.current_url.endswith("/verify/" + game))
                wait(d, 30).until(
                    lambda x: x.find_element(By.ID, "browser-verdict").get_attribute("data-state") != "pending"
                )
                el = d.find_element(By.ID, "browser-verdict")
                state, verdict = el.get_attribute("data-state"), el.get_attribute("data-verdict")
                server = d.find_element(By.ID, "server-check").get_attribute("data-verdict")
                detail = d.find_element(By.ID, "browser-detail").text
                print(f"   {game}: server {server}, browser {verdict} ({state}): {detail}")
                check(state == "agree", f"{game}: the browser's recomputation agrees with the server")
                check(verdict == server, f"{game}: same verdict in the browser and on the server ({server})")
                if expected:
                    check(server == expected, f"{game}: verdict is {expected}")
                cells = d.find_elements(By.CSS_SELECTOR, "td.browser")
                check(len(cells) > 0, f"{game}: the page lists recomputed outcomes")
                check(all(c.text.strip() not in ("", "…") for c in cells), f"{game}: every outcome was recomputed in the browser")
                mismatched = d.find_elements(By.CSS_SELECTOR, "td.browser.mismatch")
                logged_bad = d.find_elements(By.CSS_SELECTOR, "tr.bad-row")
                check(len(mismatched) == len(logged_bad), f"{game}: the browser flags the same rows as the server ({len(logged_bad)})")
                shot(d, a.screenshots, f"verify-{n:02d}-{game}.png")
            # Nothing about a game that does not exist (or is not finished).
            d.get(base + "/verify/no-such-game-0000")
            body = d.find_element(By.TAG_NAME, "body").text
            check("no finished game" in body, f"an unknown id reveals nothing (the page says: {body[:300]!r})")
        finally:
            d.quit()
    print(f"browser: {len(PASSED)} passed, 0 failed")


if __name__ == "__main__":
    main()
