"""Throwaway CAs issuing server (127.0.0.1, localhost) and client certificates for TLS tests."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class Pair:
    cert: bytes
    key: bytes


@dataclass(frozen=True)
class Authority:
    cert: bytes
    key: ec.EllipticCurvePrivateKey

    def issue(self, subject: str, *, server: bool) -> Pair:
        key = ec.generate_private_key(ec.SECP256R1())
        issuer = x509.load_pem_x509_certificate(self.cert)
        usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
        builder = (
            _base(subject, key)
            .issuer_name(issuer.subject)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        )
        if server:
            names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        cert = builder.sign(self.key, hashes.SHA256())
        return Pair(cert.public_bytes(serialization.Encoding.PEM), _pem(key))


def make_authority(name: str) -> Authority:
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        _base(name, key)
        .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(key, hashes.SHA256())
    )
    return Authority(cert.public_bytes(serialization.Encoding.PEM), key)


def write(pair: Pair, directory: Path, stem: str) -> tuple[Path, Path]:
    cert, key = directory / f"{stem}.pem", directory / f"{stem}-key.pem"
    cert.write_bytes(pair.cert)
    key.write_bytes(pair.key)
    return cert, key


def _base(subject: str, key: ec.EllipticCurvePrivateKey) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
    )


def _pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
