# A git hook as a thin client: it sends what git gave it (its name, arguments, git's GIT_*
# variables, its stdin) to the application process that started this push, over the local
# socket that process named (gitcore.hooksocket), and relays the answer: stdout, stderr and the
# exit status. The decision is the application's, made in the process that already holds the
# request's user, rules and settings; this file decides nothing and fails closed: no socket, a
# socket that does not answer, or an answer cut short, and git is told no.
#
# Installed as the hook script itself (repos.storage.install_hooks) and run by git with
# `python -I -S`: it imports only built-in modules (`_socket`, not `socket`, which costs 20 ms
# of enum and selectors imports), so the whole hook costs an interpreter start and one
# exchange (bench/hook_roundtrip.py).
import os
import select
import sys
from _socket import AF_UNIX, SHUT_WR, SOCK_STREAM, socket, timeout

CONNECT_TIMEOUT = 5.0
CHUNK = 65536
# git's variables for the hook that the application needs to act for it: the repository, the
# quarantine of the pushed objects, push options and certificates. Paths made absolute here:
# git gives some relative to the hook's working directory, which the application does not share.
PATHS = (b"GIT_DIR", b"GIT_OBJECT_DIRECTORY", b"GIT_QUARANTINE_PATH")


def fail(message):
    os.write(2, b"hostsite: " + message.encode() + b"; the push was refused and nothing changed\n")
    return 1


def header(token, hook, args):
    fields = [token, hook, str(len(args)).encode(), *args]
    for key, value in os.environb.items():
        if not key.startswith(b"GIT_"):
            continue
        if key in PATHS:
            value = os.path.abspath(value)
        elif key == b"GIT_ALTERNATE_OBJECT_DIRECTORIES":
            value = b":".join(os.path.abspath(p) if p[:1] != b'"' else p for p in value.split(b":") if p)
        fields.append(key + b"=" + value)
    payload = b"\0".join(fields)
    return len(payload).to_bytes(4, "big") + payload


def write_all(fd, data):
    while data:
        data = data[os.write(fd, data) :]


def relay(conn):
    """stdin to the socket, the socket's frames to stdout and stderr, until the exit frame.
    One poll loop, so a hook that talks back and forth with git (proc-receive) never waits on a
    full pipe in either direction."""
    conn.setblocking(False)
    sock = conn.fileno()
    poll = select.poll()
    poll.register(0, select.POLLIN)
    poll.register(sock, select.POLLIN)
    pending, received = b"", b""
    reading, eof, shut = True, False, False
    while True:
        for fd, event in poll.poll():
            if fd == 0:
                chunk = os.read(0, CHUNK)
                pending += chunk
                eof = not chunk
                continue
            if event & select.POLLOUT and pending:
                try:
                    pending = pending[conn.send(pending) :]
                except BlockingIOError:
                    pass
                except OSError:
                    pending, eof, shut = b"", True, True  # the answer says why
            if not event & (select.POLLIN | select.POLLHUP | select.POLLERR):
                continue
            try:
                chunk = conn.recv(CHUNK)
            except BlockingIOError:
                continue
            except OSError:
                chunk = b""
            if not chunk:
                return fail("the platform stopped answering this hook")
            received += chunk
            while len(received) >= 5:
                size = int.from_bytes(received[1:5], "big")
                if len(received) < 5 + size:
                    break
                kind, body, received = received[:1], received[5 : 5 + size], received[5 + size :]
                if kind == b"x":
                    return int(body)
                write_all(1 if kind == b"1" else 2, body)
        # Read stdin while the application keeps up; tell it where stdin ends once all is sent.
        if reading != (not eof and len(pending) < 4 * CHUNK):
            reading = not reading
            if reading:
                poll.register(0, select.POLLIN)
            else:
                poll.unregister(0)
        if eof and not pending and not shut:
            shut = True
            try:  # noqa: SIM105 - contextlib would cost this hook more than it does
                conn.shutdown(SHUT_WR)
            except OSError:
                pass
        poll.modify(sock, select.POLLIN | (select.POLLOUT if pending else 0))


def main():
    address = os.environb.get(b"HOSTSITE_HOOK_SOCKET", b"")
    token = os.environb.get(b"HOSTSITE_HOOK_TOKEN", b"")
    if not address or not token:
        # Only hostsite's git endpoints start git with a hook socket; anything else (a shell
        # on the server, a misconfigured daemon) must not bypass the platform's decision.
        return fail("pushes must go through hostsite's HTTP or SSH endpoint")
    hook = os.path.basename(sys.argv[0]).encode()
    conn = socket(AF_UNIX, SOCK_STREAM)
    conn.settimeout(CONNECT_TIMEOUT)
    try:
        # "@name" is an abstract socket: no file to leave behind when a process dies.
        conn.connect(b"\0" + address[1:] if address[:1] == b"@" else address)
        conn.sendall(header(token, hook, [os.fsencode(a) for a in sys.argv[1:]]))
    except (OSError, timeout):
        return fail("the platform did not answer this hook")
    return relay(conn)


if __name__ == "__main__":
    sys.exit(main())
