"""hostsite.env's parsers vs environs and django-environ, on the values operators write.

Each case sets one variable and reads it the way settings.py does (a boolean, a bounded
integer such as PORT, a comma list) through the three parsers, and prints what each makes of
it: the value, or the error. The summary counts the bad values a parser accepts without a
word (a deployment then runs with a setting nobody asked for) and the results that differ
from hostsite's, which the documented contract (docs/configuration.md) fixes. Then EMAIL_URL
through hostsite.email_config and django-environ's email_url_config, the same way.

    .venv/bin/python -m bench.env_parsers
"""

from __future__ import annotations

import os

import environ
import environs
from django.core.exceptions import ImproperlyConfigured
from marshmallow.validate import Range

from hostsite import env as ours
from hostsite.email_config import email_config

NAME = "BENCH_ENV_VALUE"

# (kind, raw value or None for unset, whether an operator could mean it)
CASES = [
    ("bool", None, True),
    ("bool", "", True),
    ("bool", "1", True),
    ("bool", "off", True),
    ("bool", " Yes ", True),
    ("bool", "maybe", False),
    ("bool", "2", False),
    ("bool", "ture", False),
    ("int", None, True),
    ("int", "", True),
    ("int", "8000", True),
    ("int", " 8000 ", True),
    ("int", "80.5", False),
    ("int", "abc", False),
    ("int", "70000", False),
    ("int", "0", False),
    ("list", None, True),
    ("list", "a, b", True),
    ("list", "a,,b,", True),
    ("list", " ", True),
]


# EMAIL_URL values (docs/configuration.md) and whether an operator could mean them.
EMAIL_CASES = [
    ("smtp://mail.example.org", True),
    ("smtp://127.0.0.1:2525/", True),
    ("smtp+tls://me%40example.org:p%3Ass%2Fw@mail.example.org", True),
    ("smtps://mail.example.org", True),
    ("console://", True),
    ("smtp://", False),
    ("smtp://mail.example.org/path", False),
    ("smtp://mail.example.org?tls=1", False),
    ("http://mail.example.org", False),
]


def email_ours(url: str) -> tuple:
    c = email_config(url)
    return (c.backend.rsplit(".", 2)[-2], c.host, c.port, c.user, c.password, c.use_tls, c.use_ssl)


def email_django_environ(url: str) -> tuple:
    c = environ.Env.email_url_config(url)
    # Unset keys are Django's defaults: port 25, no TLS, no SSL.
    return (
        c["EMAIL_BACKEND"].rsplit(".", 2)[-2],
        c["EMAIL_HOST"],
        c["EMAIL_PORT"] or 25,
        c["EMAIL_HOST_USER"] or "",
        c["EMAIL_HOST_PASSWORD"] or "",
        bool(c.get("EMAIL_USE_TLS")),
        bool(c.get("EMAIL_USE_SSL")),
    )


def email_table() -> None:
    """EMAIL_URL through hostsite.email_config and django-environ's email_url_config (environs
    needs dj-email-url, a package of its own, for the same)."""
    silent = differ = 0
    print("\nEMAIL_URL: (backend, host, port, user, password, use_tls, use_ssl)")
    for url, sensible in EMAIL_CASES:
        results = {}
        for name, fn in (("hostsite", email_ours), ("django-environ", email_django_environ)):
            try:
                results[name] = (True, repr(fn(url)))
            except (ImproperlyConfigured, ValueError) as exc:
                results[name] = (False, f"error: {str(exc)[:60]}")
        accepted, text = results["django-environ"]
        silent += accepted and not sensible
        differ += text != results["hostsite"][1]
        print(f"{url}\n    hostsite        {results['hostsite'][1]}\n    django-environ  {text}")
    bad = sum(not sensible for _, sensible in EMAIL_CASES)
    print(
        f"django-environ: {silent} of {bad} bad URLs accepted, {differ} of {len(EMAIL_CASES)} read differently"
    )


def hostsite(kind: str) -> object:
    if kind == "bool":
        return ours.env_bool(NAME, False)
    if kind == "int":
        return ours.env_int(NAME, 8000, minimum=1, maximum=65535)
    return ours.env_list(NAME, ["x"])


def use_environs(kind: str) -> object:
    env = environs.Env()
    if kind == "bool":
        return env.bool(NAME, False)
    if kind == "int":
        return env.int(NAME, 8000, validate=Range(min=1, max=65535))
    return env.list(NAME, ["x"])


def use_django_environ(kind: str) -> object:
    env = environ.Env()
    if kind == "bool":
        return env.bool(NAME, default=False)
    if kind == "int":
        number = env.int(NAME, default=8000)
        return number  # django-environ has no range: settings would check it themselves
    return env.list(NAME, default=["x"])


def outcome(fn, kind: str, raw: str | None) -> tuple[bool, str]:
    """(accepted, value or error message)."""
    if raw is None:
        os.environ.pop(NAME, None)
    else:
        os.environ[NAME] = raw
    try:
        return True, repr(fn(kind))
    except (ImproperlyConfigured, environs.EnvError, ValueError) as exc:
        return False, f"error: {str(exc)[:70]}"


def main() -> None:
    parsers = {"hostsite": hostsite, "environs": use_environs, "django-environ": use_django_environ}
    silent = dict.fromkeys(parsers, 0)
    differ = dict.fromkeys(parsers, 0)
    for kind, raw, sensible in CASES:
        print(f"{kind} {raw!r}")
        results = {name: outcome(fn, kind, raw) for name, fn in parsers.items()}
        for name, (accepted, text) in results.items():
            silent[name] += accepted and not sensible
            differ[name] += text != results["hostsite"][1]
            print(f"    {name:15} {text}")
    bad = sum(not sensible for _, _, sensible in CASES)
    print(f"\n{'parser':15} {'bad values accepted':>20} {'differ from hostsite':>21}")
    for name in parsers:
        print(f"{name:15} {silent[name]:>13} of {bad:<4} {differ[name]:>14} of {len(CASES)}")
    email_table()


if __name__ == "__main__":
    main()
