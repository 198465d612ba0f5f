#!/usr/bin/env python3
"""Open-redirect check in headless Chromium: a login link carrying an attacker's `next` must land on the site.

    python3 tests/browser/redirect.py --base-url http://127.0.0.1:8080 --user rita:PASSWORD \
        --next '/%09%5Cevil.example/healthz'

Logs in through the form opened from the attacker's link, then follows the
link again while logged in; both times the browser must stay on the base
URL's host and port. Exits non-zero on the first failed check.
"""

import argparse
import os
import sys
import tempfile
from urllib.parse import urlparse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from review_flow import By, browser, check, wait  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--base-url", required=True)
    p.add_argument("--user", required=True, help="user:password")
    p.add_argument("--next", required=True, help="the attacker's next target, percent-encoded")
    a = p.parse_args()
    base = a.base_url.rstrip("/")
    site = urlparse(base).netloc
    user, _, password = a.user.partition(":")
    link = f"{base}/login?next={a.next}"
    with tempfile.TemporaryDirectory() as profile:
        d = browser(profile)
        try:
            d.get(link)
            d.find_element(By.ID, "username").send_keys(user)
            d.find_element(By.ID, "password").send_keys(password)
            d.find_element(By.ID, "login-submit").click()
            wait(d).until(lambda x: "/login" not in x.current_url)
            check(urlparse(d.current_url).netloc == site, f"after the login form: {d.current_url} is on {site}")
            d.get(link)
            wait(d).until(lambda x: "/login" not in x.current_url)
            check(urlparse(d.current_url).netloc == site, f"logged in: {d.current_url} is on {site}")
        finally:
            d.quit()
    print("redirect: 2 passed")


if __name__ == "__main__":
    main()
