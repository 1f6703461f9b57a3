"""A Django app for one live test: a push_recorded receiver that always raises, connected
before every other app's (tests/repos/test_push_receivers.py runs a web server with it)."""
