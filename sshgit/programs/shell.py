"""The forced command: `hostsite-shell key-<id>`, run by sshd (through the account's /bin/sh)
for every SSH session of a known key.

It hands the session to the gateway: a JSON header (key, SSH_ORIGINAL_COMMAND, GIT_PROTOCOL,
SSH_CONNECTION) and its own fds 0, 1, 2 over the Unix socket (SCM_RIGHTS), then waits for the
exit status and exits with it. The gateway's forked child talks to the client directly on
those fds; this process only waits. It never runs a shell or any other program: the command
is data for the gateway. Stdlib only (started as `python3 -I -S`): a push may cost at most
100 ms over plain OpenSSH + git-shell, and Django takes ~750 ms to start. Only C modules
beyond os and sys (`import socket` and `import json` would add ~12 ms): the header's JSON is
written by json_string() and the answer is one line with the status.
"""

import _socket
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SOCKET_PATH = ""  # written by sshgit.sshd when it copies this file; else the one beside it
UNAVAILABLE = "hostsite: the SSH service is unavailable, try again shortly\n"


def socket_path():
    return SOCKET_PATH or os.path.join(HERE, "gateway.sock")


def json_string(value):
    """A JSON string (or null). Control characters, quotes, backslashes and lone surrogates
    (bytes of the command that were not UTF-8) are escaped; the rest is UTF-8 as is."""
    if value is None:
        return "null"
    out = []
    for char in value:
        code = ord(char)
        if char in '"\\' or code < 0x20 or 0xD800 <= code < 0xE000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def read_status(sock):
    data = b""
    while not data.endswith(b"\n"):
        try:
            chunk = sock.recv(256)
        except InterruptedError:
            continue
        if not chunk:
            return None
        data += chunk
    return int(data)


def main(argv):
    if len(argv) != 2 or not argv[1].startswith("key-") or not argv[1][4:].isdigit():
        sys.stderr.write("hostsite: this account only serves git over SSH\n")
        return 1
    command = json_string(os.environ.get("SSH_ORIGINAL_COMMAND"))
    protocol = json_string(os.environ.get("GIT_PROTOCOL"))
    remote = json_string((os.environ.get("SSH_CONNECTION") or "").split(" ")[0])
    header = (
        f'{{"op": "session", "key_id": {int(argv[1][4:])}, "command": {command}, '
        f'"protocol": {protocol}, "remote": {remote}}}\n'
    ).encode("utf-8", "surrogatepass")
    # fds 0, 1, 2 as SCM_RIGHTS ancillary data: an array of C ints.
    fds = b"".join(fd.to_bytes(4, sys.byteorder) for fd in (0, 1, 2))
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(5)
        sock.connect(socket_path())
        sock.sendmsg([header], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
    except OSError:
        sys.stderr.write(UNAVAILABLE)
        return 1
    # The session may last as long as a clone does: wait without a timeout.
    sock.settimeout(None)
    # Ours are copies now; closing them lets the client see EOF as soon as the gateway's child
    # is done, not when this process exits.
    for fd in (0, 1):
        os.close(fd)
    try:
        status = read_status(sock)
    except (OSError, ValueError, KeyError):
        status = None
    if status is None:
        sys.stderr.write("hostsite: the SSH service stopped during this session\n")
        return 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
