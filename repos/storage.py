"""Repositories on disk: `<REPO_ROOT>/<shard>/<id>.git`.

Names never reach the filesystem, so renames and transfers are database-only and no user
input can walk a path. A repository is built under a temporary name and renamed into place,
so a half-initialised or half-imported repository is never visible at its real path.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
import sys
import tempfile
import time
from pathlib import Path

from django.conf import settings

import gitcore
from gitcore.git import run_git, supports_reftable
from repos import gitaccess

log = logging.getLogger(__name__)

HOOKS_SOURCE = Path(__file__).resolve().parent / "hooks"
HOOK_CLIENT = Path(gitcore.__file__).resolve().parent / "hookclient.py"
# pre-receive decides, so the process serving the push answers it (gitcore.hooksocket; the
# script installed is the client that relays to it), as it answers the hooks backends handle.
# post-receive only makes the push's record durable, and does it on its own, so that the
# record is written even if the web worker dies as git finishes (repos.push_spool).
DECIDING_HOOKS = ("pre-receive",)
HOOK_NAMES = (*DECIDING_HOOKS, "post-receive")
# Modules post-receive imports, installed beside it: how a hook fails, the ref namespaces.
HOOK_MODULES = ("failsafe.py", "refspace.py")

# Configuration every hosted repository gets. Why each:
REPO_CONFIG = {
    # Refuse corrupt or malicious objects at the door rather than serving them later.
    "receive.fsckObjects": "true",
    "transfer.fsckObjects": "true",
    # Maintenance is a Celery task (repos.maintenance); git must not gc in a push.
    "gc.auto": "0",
    "receive.autogc": "false",
    "maintenance.auto": "false",
    # Policy lives in the pre-receive hook, which knows roles; git's blanket switches stay open.
    "receive.denyNonFastForwards": "false",
    "receive.denyDeletes": "false",
    "receive.advertisePushOptions": "true",
    # Partial clones (--filter=blob:none).
    "uploadpack.allowFilter": "true",
    "uploadpack.allowAnySHA1InWant": "false",
    "repack.writeBitmaps": "true",
    "core.commitGraph": "true",
    # Reflogs for branches, notes and HEAD, even in a bare repository. Not "always": that
    # keeps one reflog per workspace ref (430 MB for 100k refs, bench/workspaces.py), and a
    # deleted ref loses its reflog anyway; the pushlog is the record of every update.
    "core.logAllRefUpdates": "true",
}


def shard_for(repo_id: int) -> str:
    return format(repo_id % 256, "02x")


def repository_path(repo_id: int) -> Path:
    if not isinstance(repo_id, int) or repo_id <= 0:
        raise ValueError(f"invalid repository id {repo_id!r}")
    return settings.REPO_ROOT / shard_for(repo_id) / f"{repo_id}.git"


def hooks_dir() -> Path:
    return settings.REPO_ROOT / ".hooks"


def install_hooks() -> Path:
    """Copy the platform's hook scripts under REPO_ROOT (stable across deploys of the code).

    The scripts are standalone Python that never import Django. They run with the
    interpreter that installed them, with -I (ignore the environment and user site) and -S
    (skip site-packages: they need none, and it halves interpreter start-up).
    """
    target = hooks_dir()
    target.mkdir(parents=True, exist_ok=True)
    sources = {name: HOOK_CLIENT for name in (*DECIDING_HOOKS, *gitaccess.hook_handlers())}
    sources["post-receive"] = HOOKS_SOURCE / "post_receive.py"
    files = {name: f"#!{sys.executable} -IS\n" + source.read_text() for name, source in sources.items()}
    for module in HOOK_MODULES:
        files[module] = (HOOKS_SOURCE / module).read_text()
    for name, text in files.items():
        path = target / name
        if not path.exists() or path.read_text() != text:
            tmp = target / f".{name}.tmp"
            tmp.write_text(text)
            tmp.chmod(stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
            os.replace(tmp, path)
    return target


def create_repository_on_disk(repo_id: int, *, default_branch: str, populate=None) -> Path:
    """Initialise a bare repository and return its final path.

    `populate(path)`, if given, fills the repository (an import) before it is renamed into
    place; if it raises, nothing is left on disk.
    """
    final = repository_path(repo_id)
    if final.exists():
        # The caller's transaction just allocated this id, so no repository owns this
        # directory: it is left over from a creation that crashed between rename and commit
        # (SQLite can hand the id out again). Set it aside rather than delete it.
        quarantine_orphan(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{repo_id}-", dir=final.parent))
    try:
        args = ["init", "--bare", "--quiet", f"--initial-branch={default_branch}"]
        if supports_reftable():
            args.append("--ref-format=reftable")
        run_git([*args, str(tmp)])
        _append_config(tmp / "config", {**REPO_CONFIG, "core.hooksPath": str(install_hooks())})
        if populate is not None:
            populate(tmp)
        os.rename(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final


def _append_config(config_file: Path, values: dict[str, str]) -> None:
    """Write our settings in one go (one `git config` per key was 15 processes per repository).

    Keys and values are the platform's own constants and paths, never user input; repeated
    section headers are valid git config.
    """
    lines = []
    for key, value in values.items():
        section, _, name = key.rpartition(".")
        if any(c in value for c in '"\\\n') or not section.replace(".", "").isalnum():
            raise ValueError(f"unsafe config value for {key}: {value!r}")
        lines.append(f'[{section}]\n\t{name} = "{value}"\n')
    with open(config_file, "a", encoding="utf-8") as fh:
        fh.write("".join(lines))


def quarantine_orphan(path: Path) -> Path:
    target_dir = settings.REPO_ROOT / ".orphaned"
    target_dir.mkdir(parents=True, exist_ok=True)
    target = target_dir / f"{path.name[:-4]}-{time.time_ns()}.git"
    os.rename(path, target)
    log.warning("moved orphaned repository directory %s to %s", path, target)
    return target


def remove_repository_from_disk(path: Path) -> None:
    root = settings.REPO_ROOT.resolve()
    path = Path(path)
    # Only ever delete a <shard>/<id>.git directory under REPO_ROOT.
    if path.resolve().parent.parent != root or not path.name.endswith(".git"):
        raise ValueError(f"refusing to delete {path}: not a repository under {root}")
    shutil.rmtree(path, ignore_errors=True)


def ref_format(path: Path) -> str:
    result = run_git(["rev-parse", "--show-ref-format"], repo=path, check=False)
    return result.text.strip() if result.returncode == 0 and result.text.strip() else "files"
