"""hostsite's settings with tests.crashing_app installed first, so its receiver runs first."""

from hostsite.settings import *  # noqa: F403
from hostsite.settings import INSTALLED_APPS

INSTALLED_APPS = ["tests.crashing_app", *INSTALLED_APPS]
