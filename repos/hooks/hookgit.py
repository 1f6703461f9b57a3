# git for the hooks' handlers (pre-receive's, workspaces' proc-receive), which run on a thread
# of the application for each hook (gitcore.hooksocket): every git they run gets that hook's
# environment (git's GIT_DIR and the quarantine of the pushed objects), set for the thread by
# `environment()`, never the application's own. One poll loop moves input and output of any
# size without a thread per pipe.
import contextlib
import contextvars
import os
import select

ZERO = "0" * 40
_CHUNK = 65536


def is_zero(oid):
    return bool(oid) and set(oid) == {"0"}


class Result:
    __slots__ = ("returncode", "stderr", "stdout")

    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


_ENV: contextvars.ContextVar = contextvars.ContextVar("hook_env")


@contextlib.contextmanager
def environment(env):
    """Run the block's git commands (run, tip, is_ancestor) in `env`, the hook's."""
    token = _ENV.set(env)
    try:
        yield
    finally:
        _ENV.reset(token)


def current_env():
    """The hook's environment; outside a hook, this process's."""
    return _ENV.get(os.environ)


def run(*args, input=None, env=None):
    """Run git with argv `args` in `env` (default: the hook's environment, git's own: GIT_DIR,
    the quarantine). Input and output of any size: one poll loop writes the input while it
    reads both outputs, so neither side waits on a full pipe."""
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
    pid = os.posix_spawnp("git", ["git", *args], current_env() if env is None else env, file_actions=actions)
    os.close(out_w)
    os.close(err_w)
    if in_r is not None:
        os.close(in_r)
    stdout, stderr = _exchange(out_r, err_r, in_w, (input or "").encode())
    _pid, status = os.waitpid(pid, 0)
    return Result(os.waitstatus_to_exitcode(status), stdout, stderr)


def _exchange(out_r, err_r, in_w, data):
    chunks = {out_r: [], err_r: []}
    poll = select.poll()
    poll.register(out_r, select.POLLIN)
    poll.register(err_r, select.POLLIN)
    if in_w is not None:
        if data:
            os.set_blocking(in_w, False)
            poll.register(in_w, select.POLLOUT)
        else:
            os.close(in_w)
            in_w = None
    open_fds = len(chunks) + (in_w is not None)
    while open_fds:
        for fd, _event in poll.poll():
            if fd == in_w:
                try:
                    data = data[os.write(in_w, data[:_CHUNK]) :]
                except BlockingIOError:
                    continue
                except BrokenPipeError:
                    data = b""  # git ended without reading it all: its answer says why
                if not data:
                    poll.unregister(in_w)
                    os.close(in_w)
                    in_w = None
                    open_fds -= 1
                continue
            chunk = os.read(fd, _CHUNK)
            if chunk:
                chunks[fd].append(chunk)
            else:
                poll.unregister(fd)
                os.close(fd)
                open_fds -= 1
    return tuple(b"".join(chunks[fd]).decode("utf-8", "replace") for fd in (out_r, err_r))


def tip(ref):
    """The object a ref points at, or ZERO."""
    return run("rev-parse", "--verify", "--quiet", ref).stdout.strip() or ZERO


def is_ancestor(a, b):
    return run("merge-base", "--is-ancestor", a, b).returncode == 0
