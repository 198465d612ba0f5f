#!/usr/bin/env python3
"""Vigie dashboard browser test: drives headless Chromium through a review and an analyst's view.

Run against any deployment:

    python3 tests/browser/review_flow.py --base-url http://127.0.0.1:8088 \
        --reviewer rita:PASSWORD --analyst ana:PASSWORD \
        --account acc-10670 --flag fl-0113 --game d8-7a1e-000283 --seq 24 \
        --screenshots target/screenshots

Every option can also come from the environment: VIGIE_BASE_URL, VIGIE_REVIEWER
(user:password), VIGIE_ANALYST, VIGIE_ACCOUNT, VIGIE_FLAG, VIGIE_GAME, VIGIE_SEQ,
VIGIE_SCREENSHOTS; CHROME_BIN and CHROMEDRIVER override /usr/bin/chromium and
/usr/bin/chromedriver. The flag must be open (or claimed by the reviewer); it
ends up confirmed. Exits non-zero on the first failed check.
"""

import argparse
import os
import sys
import tempfile
import time
from urllib.parse import parse_qs, urlparse

try:
    from selenium import webdriver
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException, TimeoutException, WebDriverException
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import Select, WebDriverWait
except ImportError:  # pragma: no cover - reported clearly to the caller
    print("selenium is not installed: python3 -m pip install selenium", file=sys.stderr)
    sys.exit(3)

PASSED = []


def wait(d, seconds=15):
    """A wait that retries through page reloads (stale or missing elements).

    Chrome reports an element replaced between lookup and read as a plain WebDriverException
    ("Node with given id does not belong to the document"), not as a stale element; a real
    failure still ends the wait with a timeout.
    """
    return WebDriverWait(
        d,
        seconds,
        ignored_exceptions=(NoSuchElementException, StaleElementReferenceException, WebDriverException),
    )


def check(cond, what):
    if not cond:
        print(f"FAIL: {what}", file=sys.stderr)
        print(f"browser: {len(PASSED)} passed, 1 failed")
        sys.exit(1)
    PASSED.append(what)
    print(f"ok - {what}")


def env(name, default=None):
    v = os.environ.get(name)
    return v if v not in (None, "") else default


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--base-url", default=env("VIGIE_BASE_URL"))
    p.add_argument("--reviewer", default=env("VIGIE_REVIEWER"), help="user:password of a reviewer")
    p.add_argument("--analyst", default=env("VIGIE_ANALYST"), help="user:password of an analyst")
    p.add_argument("--account", default=env("VIGIE_ACCOUNT"))
    p.add_argument("--flag", default=env("VIGIE_FLAG"))
    p.add_argument("--game", default=env("VIGIE_GAME"))
    p.add_argument("--seq", default=env("VIGIE_SEQ"))
    p.add_argument("--screenshots", default=env("VIGIE_SCREENSHOTS", "target/screenshots"))
    p.add_argument("--reason", default="Browser test: evidence reviewed, pattern confirmed.")
    a = p.parse_args()
    missing = [n for n in ("base_url", "reviewer", "analyst", "account", "flag", "game", "seq") if not getattr(a, n)]
    if missing:
        p.error("missing: " + ", ".join("--" + m.replace("_", "-") for m in missing))
    a.base_url = a.base_url.rstrip("/")
    return a


def browser(user_data_dir):
    chrome = env("CHROME_BIN", "/usr/bin/chromium")
    driver_bin = env("CHROMEDRIVER", "/usr/bin/chromedriver")
    for path, pkg in ((chrome, "chromium"), (driver_bin, "chromium-driver")):
        if not os.path.exists(path):
            print(f"{path} not found: apt-get install -y {pkg}", file=sys.stderr)
            sys.exit(3)
    o = webdriver.ChromeOptions()
    o.binary_location = chrome
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-quic",
        "--no-first-run",
        "--disable-dev-shm-usage",
        "--window-size=1440,1000",
        f"--user-data-dir={user_data_dir}",
    ):
        o.add_argument(flag)
    d = webdriver.Chrome(service=Service(executable_path=driver_bin), options=o)
    d.set_page_load_timeout(30)
    return d


def shot(d, dirpath, name, full=True):
    os.makedirs(dirpath, exist_ok=True)
    path = os.path.join(dirpath, name)
    if full:
        h = d.execute_script("return Math.min(document.documentElement.scrollHeight, 6000)")
        d.set_window_size(1440, max(1000, int(h)))
    d.save_screenshot(path)
    d.set_window_size(1440, 1000)
    print(f"   screenshot {path}")


def login(d, base, cred):
    user, _, password = cred.partition(":")
    d.get(base + "/login")
    d.find_element(By.ID, "username").send_keys(user)
    d.find_element(By.ID, "password").send_keys(password)
    d.find_element(By.ID, "login-submit").click()
    wait(d).until(lambda x: "/login" not in x.current_url)
    return user


def logout(d):
    d.find_element(By.CSS_SELECTOR, "form[action='/logout'] button").click()
    wait(d).until(lambda x: "/login" in x.current_url)


def forged_post(d, path, body):
    """POST from the page with the session cookie and the page's own CSRF token; returns the HTTP status."""
    return d.execute_async_script(
        """
        const [path, body, done] = arguments;
        const token = (document.querySelector("input[name=csrf]") || {}).value || "";
        fetch(path, {method: "POST", credentials: "same-origin", redirect: "manual",
                     headers: {"Content-Type": "application/x-www-form-urlencoded"},
                     body: "csrf=" + encodeURIComponent(token) + "&" + body})
          .then(r => done(r.status)).catch(e => done("error " + e));
        """,
        path,
        body,
    )


def main():
    a = parse_args()
    base = a.base_url
    with tempfile.TemporaryDirectory(prefix="vigie-chrome-") as profile:
        d = browser(profile)
        try:
            run(d, a, base)
        finally:
            d.quit()
    print(f"browser: {len(PASSED)} passed, 0 failed")


def run(d, a, base):
    shots = a.screenshots
    # Login page and the redirect of a protected page.
    d.get(base + "/queue")
    check("/login" in d.current_url, "an anonymous visit to /queue lands on the login page")
    shot(d, shots, "00-login.png", full=False)

    reviewer = login(d, base, a.reviewer)
    check(d.current_url.startswith(base + "/queue"), "the reviewer lands on the queue after login")
    wait(d).until(EC.presence_of_element_located((By.ID, "queue-table")))
    rows = d.find_elements(By.CSS_SELECTOR, "tr.qrow")
    check(len(rows) > 0, "the queue lists flagged accounts")
    # Keyboard: j selects the first row, / focuses the filter.
    d.find_element(By.TAG_NAME, "body").send_keys("j")
    check("selected" in rows[0].get_attribute("class"), "j selects the first queue row")
    shot(d, shots, "01-queue.png")

    # The account page, from the queue when listed there.
    links = d.find_elements(By.XPATH, f"//a[@class='acct' and normalize-space()='{a.account}']")
    if links:
        links[0].click()
    else:
        d.get(f"{base}/account/{a.account}")
    wait(d).until(EC.presence_of_element_located((By.ID, f"flag-{a.flag}")))
    check(f"/account/{a.account}" in d.current_url, "the account page opens")
    card = d.find_element(By.ID, f"flag-{a.flag}")
    check(len(card.find_elements(By.CSS_SELECTOR, "ol.refs li")) > 0, "the flag shows its evidence references")
    shot(d, shots, "02-account.png")

    # The game at the flagged seq, from the evidence link.
    ref = None
    for el in card.find_elements(By.CSS_SELECTOR, "a.ref"):
        href = el.get_attribute("href") or ""
        if f"/game/{a.game}?seq={a.seq}" in href:
            ref = el
            break
    check(ref is not None, f"the flag links to game {a.game} at seq {a.seq}")
    ref.click()
    wait(d).until(EC.presence_of_element_located((By.ID, "timeline")))
    item = d.find_element(By.ID, f"ev-{a.seq}")
    check("current" in item.get_attribute("class").split(), f"the timeline marks seq {a.seq} as the current event")
    check(item.get_attribute("aria-current") == "step", "the current timeline event carries aria-current")
    if "has-finding" in item.get_attribute("class").split():
        codes = item.find_element(By.CSS_SELECTOR, ".tl-codes").text
        detail = d.find_element(By.ID, "event-detail").text
        check(codes and codes.split(",")[0].strip() in detail, f"the finding at seq {a.seq} ({codes}) is shown with the event")
    check(d.find_element(By.ID, "current-seq").text.strip() == str(a.seq), "the board is shown at the flagged seq")
    check(len(d.find_elements(By.CSS_SELECTOR, ".board-box svg, .board-box .belote")) > 0, "the board is drawn")
    marked = d.find_elements(By.CSS_SELECTOR, "table.players tr.focus")
    check(len(marked) == 1 and a.account in marked[0].text, f"the seat of {a.account} is marked")
    check(len(d.find_elements(By.ID, "focus-note")) == 1, "the page says whose evidence opened it")
    shot(d, shots, "03-game.png", full=False)

    def query(url):
        return parse_qs(urlparse(url).query)

    # Step forward without JS links, then back with the arrow key; the mark stays.
    nxt = d.find_elements(By.ID, "nav-next")
    if nxt:
        nxt[0].click()
        wait(d).until(lambda x: query(x.current_url).get("seq") != [str(a.seq)])
        check(query(d.current_url).get("for") == [a.account], "stepping keeps the marked account")
        d.find_element(By.TAG_NAME, "body").send_keys("\ue012")  # ArrowLeft
        wait(d).until(lambda x: query(x.current_url).get("seq") == [str(a.seq)])
        check(True, "stepping with links and the arrow keys moves through the game")

    # Claim and confirm with a reason.
    d.get(f"{base}/account/{a.account}#flag-{a.flag}")
    card = d.find_element(By.ID, f"flag-{a.flag}")
    claim = card.find_elements(By.CSS_SELECTOR, "button.claim-btn")
    if claim:
        claim[0].click()
        wait(d).until(lambda x: "claimed" in x.find_element(By.ID, f"status-{a.flag}").text)
        check(True, "the reviewer claims the flag")
    card = d.find_element(By.ID, f"flag-{a.flag}")
    form = card.find_element(By.CSS_SELECTOR, "form.confirm-form")
    Select(form.find_element(By.NAME, "decision")).select_by_value("block_recommended")
    form.find_element(By.NAME, "reason").send_keys(a.reason)
    form.find_element(By.CSS_SELECTOR, "button.confirm-btn").click()
    wait(d).until(lambda x: "confirmed" in x.find_element(By.ID, f"status-{a.flag}").text)
    check(True, "the flag is confirmed with a reason")
    shot(d, shots, "04-account-confirmed.png")

    d.get(base + "/audit")
    status = d.find_element(By.ID, "chain-status")
    check("chain-ok" in status.get_attribute("class"), "the audit page verifies the hash chain")
    table = d.find_element(By.ID, "audit-table").text
    check(a.flag in table and a.reason in table and reviewer in table, "the confirmation is in the audit log with its reason")
    shot(d, shots, "05-audit.png")
    d.get(base + "/decisions")
    check(a.reason in d.find_element(By.ID, "decisions-table").text, "the decision is listed on /decisions")
    shot(d, shots, "06-decisions.png")
    logout(d)

    # The analyst reads but cannot decide.
    login(d, base, a.analyst)
    d.get(f"{base}/account/{a.account}")
    card = d.find_element(By.ID, f"flag-{a.flag}")
    check(not card.find_elements(By.CSS_SELECTOR, "form[action^='/flag/']"), "the analyst sees no review action")
    check(not d.find_elements(By.CSS_SELECTOR, "button.confirm-btn, button.claim-btn"), "no confirm or claim button for the analyst")
    shot(d, shots, "07-analyst-account.png")
    status = forged_post(d, f"/flag/{a.flag}/reopen", "reason=forged")
    check(status == 403, f"a forged review POST by the analyst is refused (got {status})")
    status = forged_post(d, f"/flag/{a.flag}/confirm", "decision=blocked&reason=forged")
    check(status == 403, f"a forged confirm by the analyst is refused (got {status})")
    d.get(f"{base}/account/{a.account}")
    check("confirmed" in d.find_element(By.ID, f"status-{a.flag}").text, "the flag is still confirmed after the forged POSTs")
    d.get(base + "/dashboards")
    check(len(d.find_elements(By.CSS_SELECTOR, "figure.panel")) >= 4, "the analyst sees the dashboards")
    check(not d.find_elements(By.CSS_SELECTOR, "figure.panel .alert"), "every dashboard panel rendered")
    shot(d, shots, "08-dashboards.png")
    d.get(f"{base}/game/{a.game}")
    shot(d, shots, "09-game-start.png", full=False)


if __name__ == "__main__":
    try:
        main()
    except (TimeoutException, NoSuchElementException) as e:
        print(f"FAIL: {type(e).__name__}: {e.msg if hasattr(e, 'msg') else e}", file=sys.stderr)
        print(f"browser: {len(PASSED)} passed, 1 failed")
        sys.exit(1)
