"""AuthorizedKeysCommand: `hostsite-keys %u %f %t %k` (user, fingerprint, key type, base64 key).

Asks the gateway (sshgit.gateway) for the key with that fingerprint over its Unix socket and,
when it is usable and the stored type and blob are the ones offered, prints one
authorized_keys line forcing hostsite-shell. Anything else prints nothing: sshd then refuses
the key. Errors go to stderr, which sshd logs. Stdlib only: sshd runs this for every key a
client offers, and the issue allows 20 ms median with 100k keys (Django takes ~750 ms to start).
"""

import json
import os
import socket
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# sshgit.sshd writes the socket's path here when it copies this file; else the one beside it.
SOCKET_PATH = ""
TIMEOUT = 2.0  # sshd waits on us while the client waits on sshd: never hang


def socket_path():
    return SOCKET_PATH or os.path.join(HERE, "gateway.sock")


def ask(request):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(TIMEOUT)
        sock.connect(socket_path())
        sock.sendall(json.dumps(request).encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    return json.loads(data or b"{}")


def main(argv):
    if len(argv) != 5:
        sys.stderr.write("hostsite-keys: expected arguments %u %f %t %k\n")
        return 0
    _user, fingerprint, key_type, key_data = argv[1:]
    try:
        found = ask({"op": "key", "fingerprint": fingerprint})
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"hostsite-keys: the gateway did not answer at {socket_path()}: {exc}\n")
        return 0
    if not found or found.get("type") != key_type or found.get("key") != key_data:
        return 0
    key_id = int(found["id"])
    shell = os.path.join(HERE, "hostsite-shell")
    # `restrict`: no PTY, no forwarding of any kind, no ~/.ssh/rc, whatever sshd_config says.
    sys.stdout.write(f'command="{shell} key-{key_id}",restrict {key_type} {key_data}\n')
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
