"""gunicorn configuration (`gunicorn -c hostsite/gunicorn_conf.py hostsite.wsgi:application`).

Why gunicorn with gthread workers, not uvicorn: git over HTTP is a long, streamed request in
both directions. Under WSGI, gunicorn hands the view a socket-backed wsgi.input (chunked
request bodies included) and writes each chunk a StreamingHttpResponse yields straight to
the socket, so a multi-GB clone or push never sits in memory. Django's ASGI handler, by
contrast, reads the whole request body before calling the view, and runs a synchronous
streaming iterator through sync_to_async per chunk. gthread rather than sync workers because
the worker's heartbeat runs on its own thread: an hour-long clone is not killed by `timeout`,
and one slow client does not hold a whole worker process.
"""

import os

from hostsite.env import env_int, env_str

_host = env_str("HOST", "127.0.0.1")
_port = env_int("PORT", 8000, minimum=1, maximum=65535)
bind = [f"[{_host}]:{_port}" if ":" in _host else f"{_host}:{_port}"]
workers = env_int("WEB_CONCURRENCY", 2, minimum=1)
worker_class = "gthread"
threads = env_int("WEB_THREADS", 8, minimum=1)
timeout = 120
graceful_timeout = 20
keepalive = 5
accesslog = "-" if os.environ.get("ACCESS_LOG", "1") != "0" else None
errorlog = "-"
loglevel = env_str("LOG_LEVEL", "info").lower()
# Behind a TLS-terminating proxy, trust its X-Forwarded-* only from where it runs.
forwarded_allow_ips = env_str("FORWARDED_ALLOW_IPS", "127.0.0.1,::1")
proc_name = "hostsite-web"
# gunicorn 27's control socket defaults to one path per user (~/.gunicorn); several
# instances on one machine (tests, side-by-side benchmarks) would fight over it.
control_socket_disable = True
