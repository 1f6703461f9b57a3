"""The names the SSRF guard tests resolve, and the resolver that answers for them as DNS would:
public names get documentation-free public addresses, others private ones."""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import socket
from pathlib import Path

ORIGIN, OTHER, INTERNAL = "origin.example", "other.example", "intranet.example"
PUBLIC = {ORIGIN: "93.184.216.34", OTHER: "93.184.216.35", "rebind.example": "93.184.216.36"}
SECRET = "s3cret-4711"


def resolver(table: dict[str, list[str] | str]):
    def resolve(host, port, **_):
        answer = table.get(host)
        if answer is None:
            with contextlib.suppress(ValueError):
                answer = str(ipaddress.ip_address(host))  # an address literal needs no DNS
        if answer is None:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        addresses = [answer] if isinstance(answer, str) else answer
        return [
            (socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port))
            for a in addresses
        ]

    return resolve


NAMES = resolver({**PUBLIC, INTERNAL: "10.0.0.7", "mixed.example": ["93.184.216.40", "192.168.1.9"]})


def certificates(directory: Path) -> tuple[Path, Path, Path]:
    """A CA, and a certificate it signed for the test's names (cryptography is a dependency)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(1)
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    names = [x509.DNSName(n) for n in (ORIGIN, OTHER)]
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, ORIGIN)])
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(2)
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    ca_path, cert_path, key_path = directory / "ca.pem", directory / "cert.pem", directory / "key.pem"
    ca_path.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return ca_path, cert_path, key_path
