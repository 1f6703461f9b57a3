# hostsite: one image for the web server, the Celery worker, beat and migrations
# (docker-compose.yml picks the command). Build: docker build -t hostsite .
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    VAR_DIR=/var/lib/hostsite \
    REPO_ROOT=/srv/repos \
    HOST=0.0.0.0 \
    PORT=8000

# git does all repository work (push/fetch, imports, maintenance); OpenSSH serves git over SSH
# (the `ssh` service), the client is for ssh-keygen and ssh-keyscan.
RUN apt-get update \
    && apt-get install -y --no-install-recommends git openssh-server openssh-client \
    && rm -rf /var/lib/apt/lists/*

# The application runs unprivileged. Its code stays root-owned (read-only to it); it writes
# only to VAR_DIR and REPO_ROOT, created here so that new volumes inherit the ownership.
RUN groupadd --system --gid 10001 hostsite \
    && useradd --system --uid 10001 --gid hostsite --create-home --home-dir /home/hostsite \
        --shell /usr/sbin/nologin hostsite \
    && install -d -o hostsite -g hostsite -m 0750 /var/lib/hostsite /srv/repos \
    && useradd --system --create-home --home-dir /home/git --shell /bin/sh git \
    && usermod -p '*' git

WORKDIR /app

# Dependencies first, so a code change does not reinstall them.
COPY requirements.txt ./
RUN pip install --no-cache-dir -r requirements.txt

COPY . .

USER hostsite

# Settings refuse to load without SECRET_KEY; collectstatic gets a throwaway one through a build
# argument used by this step alone. It is never written to the image's environment: the real key
# comes from the runtime environment.
ARG COLLECTSTATIC_SECRET_KEY=collectstatic-build-only-not-a-secret
RUN SECRET_KEY="$COLLECTSTATIC_SECRET_KEY" python manage.py collectstatic --noinput

# Declared after collectstatic: a new named volume is seeded with $VAR_DIR/static from the image.
VOLUME ["/var/lib/hostsite", "/srv/repos"]

EXPOSE 8000

CMD ["gunicorn", "-c", "hostsite/gunicorn_conf.py", "hostsite.wsgi:application"]
