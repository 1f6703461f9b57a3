# git for the proc-receive hook, without subprocess: importing subprocess (and the selectors,
# signal and threading modules it pulls in) costs a hook more than the git it runs
# (bench/smart_http.py measured the same for pre-receive). Standalone: no Django, no project
# imports; installed beside the hooks (workspaces.access.backend.extra_hooks).
import os

ZERO = "0" * 40


def is_zero(oid):
    return bool(oid) and set(oid) == {"0"}


class Result:
    __slots__ = ("returncode", "stderr", "stdout")

    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def _drain(fd):
    chunks = []
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks).decode("utf-8", "replace")


def run(*args, input=None):
    """Run git with argv `args` in the hook's environment (git's: GIT_DIR, the quarantine).
    stdout is read whole; stderr only matters for `update-ref --stdin`, whose output is a few
    lines, so reading it after stdout cannot block git. `input` must be small next to a pipe's
    buffer for the commands it is used with (their output is a line per command at most)."""
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    actions = [
        (os.POSIX_SPAWN_DUP2, out_w, 1),
        (os.POSIX_SPAWN_DUP2, err_w, 2),
        (os.POSIX_SPAWN_CLOSE, out_r),
        (os.POSIX_SPAWN_CLOSE, err_r),
    ]
    in_r = in_w = None
    if input is None:
        actions.append((os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0))
    else:
        in_r, in_w = os.pipe()
        actions += [(os.POSIX_SPAWN_DUP2, in_r, 0), (os.POSIX_SPAWN_CLOSE, in_w)]
    pid = os.posix_spawnp("git", ["git", *args], os.environ, file_actions=actions)
    os.close(out_w)
    os.close(err_w)
    if in_r is not None:
        os.close(in_r)
        data = input.encode()
        try:
            while data:
                data = data[os.write(in_w, data) :]
        except BrokenPipeError:
            pass
        os.close(in_w)
    stdout = _drain(out_r)
    stderr = _drain(err_r)
    _pid, status = os.waitpid(pid, 0)
    return Result(os.waitstatus_to_exitcode(status), stdout, stderr)


def tip(ref):
    """The object a ref points at, or ZERO."""
    return run("rev-parse", "--verify", "--quiet", ref).stdout.strip() or ZERO


def is_ancestor(a, b):
    return run("merge-base", "--is-ancestor", a, b).returncode == 0
