#!/usr/bin/env python3
import os
import sys
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent


def use_local_secret_key() -> None:
    """Take the key `make run` generated in VAR_DIR/secret_key when SECRET_KEY is unset.

    An operator's `manage.py ...` beside `make run` must reach the same site, and settings
    refuse to start without a key when DEBUG is off. Only manage.py does this: gunicorn
    (hostsite/wsgi.py) and Celery still need SECRET_KEY from the environment in production.
    VAR_DIR is resolved as hostsite/settings.py does (unset or empty: ./var beside this file).
    """
    if os.environ.get("SECRET_KEY"):
        return
    var_dir = Path(os.environ.get("VAR_DIR") or BASE_DIR / "var").resolve()
    try:
        key = (var_dir / "secret_key").read_text().strip()
    except FileNotFoundError:
        return  # settings then raise ImproperlyConfigured naming SECRET_KEY
    if key:
        os.environ["SECRET_KEY"] = key


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hostsite.settings")
    use_local_secret_key()
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
