"""AuthorizedKeysCommand: `hostsite-keys %u %f %t %k` (user, fingerprint, key type, base64 key).

Asks the gateway (sshgit.gateway) for the key with that fingerprint over its Unix socket and,
when it is usable and the stored type and blob are the ones offered, prints one
authorized_keys line forcing hostsite-shell. Anything else prints nothing: sshd then refuses
the key. Errors go to stderr, which sshd logs. Stdlib only: sshd runs this for every key a
client offers, and the issue allows 20 ms median with 100k keys (Django takes ~750 ms to start).

Only C modules beyond os and sys: `import socket` and `import json` cost ~6 ms each at start
(enum, re), a third of the budget, so this speaks to _socket and parses the one-line answer
(`<id> <type> <base64 blob>`, or an empty line) itself.
"""

import _socket
import os
import sys

FINGERPRINT_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=:")

HERE = os.path.dirname(os.path.abspath(__file__))
# sshgit.sshd writes the socket's path here when it copies this file; else the one beside it.
SOCKET_PATH = ""
TIMEOUT = 2.0  # sshd waits on us while the client waits on sshd: never hang


def socket_path():
    return SOCKET_PATH or os.path.join(HERE, "gateway.sock")


def ask(fingerprint):
    """[id, type, blob] of the usable key with this fingerprint, or [] (the gateway's answer)."""
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(TIMEOUT)
        sock.connect(socket_path())
        # JSON by hand: the fingerprint's characters were checked, none needs escaping.
        sock.sendall(b'{"op": "key", "fingerprint": "' + fingerprint.encode() + b'"}\n')
        data = b""
        while not data.endswith(b"\n"):
            chunk = sock.recv(4096)
            if not chunk:
                raise OSError("the gateway closed the connection without an answer")
            data += chunk
    finally:
        sock.close()
    return data.decode().split()


def main(argv):
    if len(argv) != 5:
        sys.stderr.write("hostsite-keys: expected arguments %u %f %t %k\n")
        return 0
    _user, fingerprint, key_type, key_data = argv[1:]
    if not fingerprint or not FINGERPRINT_CHARS.issuperset(fingerprint):
        return 0
    try:
        found = ask(fingerprint)
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"hostsite-keys: the gateway did not answer at {socket_path()}: {exc}\n")
        return 0
    if len(found) != 3 or found[1] != key_type or found[2] != key_data or not found[0].isdigit():
        return 0
    key_id = int(found[0])
    shell = os.path.join(HERE, "hostsite-shell")
    # `restrict`: no PTY, no forwarding of any kind, no ~/.ssh/rc, whatever sshd_config says.
    sys.stdout.write(f'command="{shell} key-{key_id}",restrict {key_type} {key_data}\n')
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
