"""What bench.visibility asks of the server: a commit page and a v2 fetch by id, anonymous; and,
outside the rounds, the closure in-process, the installed pre-receive hook with the environment
the platform gives carol, and a check that the rule applies."""

from __future__ import annotations

import json
import os
import statistics
import time
import urllib.error
import urllib.request
from pathlib import Path

from bench.harness import GIT, PY, ZERO_OID, Git, SetupError, manage, time_runs
from bench.harness.hookserve import served
from bench.harness.repository import Pusher
from bench.visibility_report import REPOS
from repos.hooks import refspace

_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never a proxy


def url_for(hs: dict, repo: str, user: str | None = None) -> str:
    auth = f"{user}:{hs['tokens'][user]}@" if user else ""
    return f"http://{auth}127.0.0.1:{hs['port']}/bench/{repo}"


def get_page(hs: dict, repo: str, sha: str) -> tuple[int, float]:
    url = f"{url_for(hs, repo)}/commit/{sha}"
    request = urllib.request.Request(url, headers={"User-Agent": "bench"})  # noqa: S310 - loopback http
    t0 = time.perf_counter()
    try:
        with _OPENER.open(request, timeout=120) as response:
            response.read()
            status = response.status
    except urllib.error.HTTPError as exc:
        exc.read()
        status = exc.code
    return status, 1000 * (time.perf_counter() - t0)


def pkt(text: str) -> bytes:
    data = text.encode()
    return f"{len(data) + 4:04x}".encode() + data


def fetch_by_id(hs: dict, repo: str, want: str, have: str) -> tuple[int, bool, float]:
    """Protocol v2 `fetch` of one object by id, anonymous: (status, got a packfile, ms)."""
    return negotiate(hs, repo, want, [have], True)


def negotiate(hs: dict, repo: str, want: str, haves: list[str], done: bool) -> tuple[int, bool, float]:
    """A protocol v2 `fetch` round, anonymous: one want and these haves, then `done` (a pack)
    or not (acknowledgments): (status, got a packfile or acknowledgments, ms)."""
    body = (pkt("command=fetch\n") + pkt("agent=git/bench\n") + b"0001" + pkt("no-progress\n")
            + pkt(f"want {want}\n") + b"".join(pkt(f"have {h}\n") for h in haves)
            + (pkt("done\n") if done else b"") + b"0000")  # fmt: skip
    request = urllib.request.Request(  # noqa: S310 - a loopback http URL we built
        f"{url_for(hs, repo)}.git/git-upload-pack", data=body, method="POST",
        headers={"Content-Type": "application/x-git-upload-pack-request", "Git-Protocol": "version=2",
                 "Accept": "application/x-git-upload-pack-result", "User-Agent": "git/bench"},
    )  # fmt: skip
    t0 = time.perf_counter()
    try:
        with _OPENER.open(request, timeout=120) as response:
            data = response.read()
            status = response.status
    except urllib.error.HTTPError as exc:
        data = exc.read()
        status = exc.code
    answered = b"packfile" in data if done else b"acknowledgments" in data
    return status, answered, 1000 * (time.perf_counter() - t0)


CLOSURE_CODE = """
import json, time
from pathlib import Path
from django.contrib.auth.models import AnonymousUser
from repos.models import Repository
from gitcore.refstamp import refs_fingerprint
from workspaces.visibility import closure as v
from workspaces.visibility.rule import hidden_prefixes
repo = Repository.objects.get(owner__username='bench', name='moderated')
gitdir = Path(repo.disk_path)
prefixes = hidden_prefixes(repo, AnonymousUser())
out = {'prefixes': prefixes, 'compute': [], 'file': [], 'memory': [], 'fingerprint': []}
for i in range(RUNS):
    for p in gitdir.glob(v.CACHE_PREFIX + '*'):
        p.unlink()
    for key, fn in (('compute', v.closure), ('file', v.closure), ('memory', v.closure),
                    ('fingerprint', lambda g, p: refs_fingerprint(g))):
        if key != 'memory':
            v._MEMORY.clear()
        t0 = time.perf_counter()
        found = fn(gitdir, prefixes)
        out[key].append(1000 * (time.perf_counter() - t0))
out['objects'] = len(v.closure(gitdir, prefixes))
print(json.dumps(out))
"""


def measure_closure(hs: dict, runs: int) -> dict:
    out = json.loads(
        manage(hs["env"], "shell", "-c", CLOSURE_CODE.replace("RUNS", str(runs))).strip().splitlines()[-1]
    )
    return {"prefixes": out["prefixes"], "objects": out["objects"], "runs": runs,
            **{f"{key}_median_ms": statistics.median(out[key]) for key in ("compute", "file", "memory", "fingerprint")}}  # fmt: skip


HOOK_ENV_CODE = f"""
import json
from django.contrib.auth import get_user_model
from repos import gitaccess
from repos.models import Repository
carol = get_user_model().objects.get(username='carol')
out = {{}}
for name in ('moderated', 'plain'):
    repo = Repository.objects.get(owner__username='bench', name=name)
    req = gitaccess.GitRequest(repository=repo, user=carol, role='reader', service='receive-pack',
                               commands=(('0' * 40, '1' * 40, '{refspace.WORKSPACES}carol/hook'),))
    env = gitaccess.push_env(req)
    out[name] = dict(env, HOSTSITE_REPO_ID=str(repo.pk), HOSTSITE_PUSHER_ID=str(carol.pk))
print(json.dumps(out))
"""


def measure_hooks(hs: dict, git: Git, tmp: Path, canon: dict, runs: int) -> dict:
    hook = hs["hooks_dir"] / "pre-receive"
    if not os.access(hook, os.X_OK):
        raise SetupError(f"{hook} is missing or not executable")
    platform_env = json.loads(manage(hs["env"], "shell", "-c", HOOK_ENV_CODE).strip().splitlines()[-1])
    envs, news = {}, {}
    for repo in REPOS:
        # The pushed commit, as receive-pack would have it: in a quarantine object directory
        # whose alternate is the repository's, no ref on it (the hook's fast path depends on it).
        quarantine = tmp / f"quarantine-{repo}"
        quarantine.mkdir(exist_ok=True)
        objects = str(Path(hs["dirs"][repo]) / "objects")
        q_env = {"GIT_OBJECT_DIRECTORY": str(quarantine), "GIT_ALTERNATE_OBJECT_DIRECTORIES": objects,
                 "GIT_QUARANTINE_PATH": str(quarantine)}  # fmt: skip
        news[repo] = Pusher(Git(git.env | q_env, git.secrets), hs["dirs"][repo]).commit(f"hook-{repo}")
        envs[repo] = platform_env[repo] | q_env | {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOSTSITE_PUSHER": "carol", "HOSTSITE_ROLE": "reader",
            "HOSTSITE_REF_UPDATES_FILE": str(tmp / f"hook-updates-{repo}"), "GIT_DIR": str(hs["dirs"][repo]),
        }  # fmt: skip
        envs[repo] = served(envs[repo])
    cases = {
        "carol creates a ref at a new commit, bench/moderated": ("moderated", news["moderated"], 0),
        "same, bench/plain": ("plain", news["plain"], 0),
        "carol creates a ref at mallory's tip (refused), moderated": ("moderated", canon["mallory"], 1),
    }
    samples = {name: [] for name in cases}
    wrong: dict[str, str] = {}
    names = list(cases)
    for i in range(runs):
        for name in names if i % 2 == 0 else reversed(names):
            repo, new, expect = cases[name]
            line = f"{ZERO_OID} {new} {refspace.WORKSPACES}carol/hook\n".encode()
            r = time_runs([str(hook)], env=envs[repo], n=1, stdin=line, cwd=hs["dirs"][repo])
            samples[name].append(r["samples_ms"][0])
            if bool(r["failures"]) != bool(expect):
                wrong[name] = r["last_error"] or "exited 0"
    results = {name: {"median_ms": statistics.median(s), "min_ms": min(s), "max_ms": max(s), "n": len(s),
                      "unexpected": wrong.get(name, "")} for name, s in samples.items()}  # fmt: skip
    # Attribution: the hook's walk, as it runs it, alone.
    walk = [GIT, "rev-list", "--objects", "--no-object-names", "--stdin", "--not", "--branches", "--tags"]
    walked = time_runs(
        walk,
        env=envs["moderated"],
        n=runs,
        cwd=hs["dirs"]["moderated"],
        stdin=f"{news['moderated']}\n".encode(),
    )
    results["its rev-list walk alone (<new> --not branches, tags), moderated"] = {
        k: walked[k] for k in ("median_ms", "min_ms", "max_ms", "n")
    }
    floor = time_runs([PY, "-IS", "-c", "pass"], env=envs["plain"], n=runs)
    results["python -IS -c pass (floor)"] = {k: floor[k] for k in ("median_ms", "min_ms", "max_ms", "n")}
    results["env_moderated_has_blocked_prefixes"] = "HOSTSITE_BLOCKED_PREFIXES" in platform_env["moderated"]
    results["env_plain_has_blocked_prefixes"] = "HOSTSITE_BLOCKED_PREFIXES" in platform_env["plain"]
    return results


def check_rule(hs: dict, canon: dict) -> dict:
    m, parent = canon["mallory"], canon["mallory_parent"]
    return {repo: {"page_status": get_page(hs, repo, m)[0], "fetch": fetch_by_id(hs, repo, m, parent)[:2]}
            for repo in REPOS}  # fmt: skip
