"""A throwaway CA and a server certificate for 127.0.0.1/localhost, made at test time.

Uses the `cryptography` package when installed, else the `openssl` command line. The client under
test trusts `TlsFiles.ca_bundle`, exactly as it would trust a cluster's service CA.
"""

from __future__ import annotations

import datetime
import importlib.util
import ipaddress
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class TlsFiles:
    ca_bundle: Path
    cert: Path
    key: Path


def make_tls_files(directory: Path) -> TlsFiles:
    directory.mkdir(parents=True, exist_ok=True)
    files = TlsFiles(directory / "ca.pem", directory / "server.pem", directory / "server-key.pem")
    if importlib.util.find_spec("cryptography") is None:
        _with_openssl(files, directory)
    else:
        _with_cryptography(files)
    return files


def _with_cryptography(files: TlsFiles) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    def builder(
        subject: str, issuer: str, key: ec.EllipticCurvePrivateKey
    ) -> x509.CertificateBuilder:
        now = datetime.datetime.now(datetime.UTC)
        return (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
            .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
        )

    ca_key = ec.generate_private_key(ec.SECP256R1())
    server_key = ec.generate_private_key(ec.SECP256R1())
    ca_usage = x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=True,
        crl_sign=True,
        encipher_only=False,
        decipher_only=False,
    )
    ca = (
        builder("test-ca", "test-ca", ca_key)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(ca_usage, critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    alt_names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    server = (
        builder("localhost", "test-ca", server_key)
        .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    files.ca_bundle.write_bytes(ca.public_bytes(pem))
    files.cert.write_bytes(server.public_bytes(pem))
    private = serialization.PrivateFormat.PKCS8
    files.key.write_bytes(server_key.private_bytes(pem, private, serialization.NoEncryption()))


def _with_openssl(files: TlsFiles, directory: Path) -> None:
    ca_key, csr, ext = directory / "ca-key.pem", directory / "server.csr", directory / "san.ext"
    ext.write_text(
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n"
        "authorityKeyIdentifier=keyid\nsubjectKeyIdentifier=hash\n"
    )
    commands = [
        ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", ca_key, "-out", files.ca_bundle, "-days", "1", "-subj", "/CN=test-ca",
         "-addext", "basicConstraints=critical,CA:TRUE,pathlen:0",
         "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature"],
        ["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", files.key, "-out", csr, "-subj", "/CN=localhost"],
        ["x509", "-req", "-in", csr, "-CA", files.ca_bundle, "-CAkey", ca_key, "-CAcreateserial",
         "-out", files.cert, "-days", "1", "-extfile", ext],
    ]  # fmt: skip  # one command line a row, each flag beside its value
    for args in commands:
        subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True)
