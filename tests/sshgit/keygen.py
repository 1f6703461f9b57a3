"""Real keys for the key tests: made by ssh-keygen (argv, never a shell), and the two
security-key types built by hand, since ssh-keygen needs a token to make those."""

from __future__ import annotations

import base64
import os
import subprocess
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

SSH_KEYGEN = "/usr/bin/ssh-keygen"


def keygen(argv: list[str]) -> str:
    return subprocess.run([SSH_KEYGEN, *argv], check=True, capture_output=True, text=True, timeout=120).stdout


def make_key(
    directory: Path, kind: str = "ed25519", bits: int | None = None, comment: str = "me@laptop"
) -> Path:
    """A new key pair in `directory`; returns the private key's path (the .pub is beside it)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"id_{kind}{bits or ''}_{os.urandom(4).hex()}"
    keygen(["-q", "-N", "", "-t", kind, *(["-b", str(bits)] if bits else []), "-C", comment, "-f", str(path)])
    return path


def public_line(
    directory: Path, kind: str = "ed25519", bits: int | None = None, comment: str = "me@laptop"
) -> str:
    return Path(f"{make_key(directory, kind, bits, comment)}.pub").read_text()


def fingerprint_by_ssh_keygen(pub: Path) -> tuple[int, str, str]:
    """(bits, fingerprint, type label) as `ssh-keygen -l -E sha256 -f` prints them."""
    fields = keygen(["-l", "-E", "sha256", "-f", str(pub)]).split()
    return int(fields[0]), fields[1], fields[-1].strip("()")


def _string(data: bytes) -> bytes:
    return len(data).to_bytes(4, "big") + data


def blob(*parts: bytes) -> bytes:
    return b"".join(_string(p) for p in parts)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def p256_point() -> bytes:
    return (
        ec.generate_private_key(ec.SECP256R1())
        .public_key()
        .public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    )


def sk_ed25519_line(comment: str = "token") -> str:
    key_type = b"sk-ssh-ed25519@openssh.com"
    return f"{key_type.decode()} {b64(blob(key_type, os.urandom(32), b'ssh:'))} {comment}\n"


def sk_ecdsa_line(comment: str = "token") -> str:
    key_type = b"sk-ecdsa-sha2-nistp256@openssh.com"
    return f"{key_type.decode()} {b64(blob(key_type, b'nistp256', p256_point(), b'ssh:'))} {comment}\n"


def ed25519_line(comment: str = "") -> str:
    """A well-formed ed25519 public key line without running ssh-keygen (any 32 bytes are a
    key as far as parsing goes): for tests that need many distinct keys."""
    line = f"ssh-ed25519 {b64(blob(b'ssh-ed25519', os.urandom(32)))}"
    return f"{line} {comment}".rstrip() + "\n"
