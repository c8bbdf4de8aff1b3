"""Certificates for the provider: a CA, a serving certificate, optional client certificates.

Used by `trainer-policy certs` and by the tests (real certificates made at test time). Keys are
ECDSA P-256; the caBundle for the Provider object is the base64 of the CA's PEM.
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class KeyPair:
    cert_pem: bytes
    key_pem: bytes

    def write(self, cert_path: Path, key_path: Path) -> None:
        cert_path.write_bytes(self.cert_pem)
        key_path.write_bytes(self.key_pem)
        key_path.chmod(0o600)


MAX_DAYS = 3650
"""Longest validity `certs` issues (ten years); 0 or negative days make certificates already expired."""


def check_days(days: int) -> None:
    if not 1 <= days <= MAX_DAYS:
        raise ValueError(f"validity must be 1 to {MAX_DAYS} days, got {days}")


def check_ca(ca: KeyPair) -> None:
    """Raises ValueError unless `ca` is a usable CA: a PEM CA certificate (basicConstraints CA, keyCertSign),
    currently valid, and an unencrypted EC private key that belongs to it."""
    try:
        cert = x509.load_pem_x509_certificate(ca.cert_pem)
    except ValueError as exc:
        raise ValueError(f"CA certificate is not a PEM certificate: {exc}") from exc
    try:
        key = serialization.load_pem_private_key(ca.key_pem, password=None)
    except TypeError as exc:
        raise ValueError("CA key is encrypted: give an unencrypted PEM key (openssl pkey -in KEY -out PLAIN)") from exc
    except ValueError as exc:
        raise ValueError(f"CA key is not a PEM private key: {' '.join(str(exc).split())}") from exc
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise ValueError("CA key must be an EC key")
    if key.public_key().public_numbers() != cert.public_key().public_numbers():
        raise ValueError("CA key does not belong to the CA certificate (their public keys differ)")
    try:
        basic = cert.extensions.get_extension_for_class(x509.BasicConstraints).value
    except x509.ExtensionNotFound:
        basic = None
    if basic is None or not basic.ca:
        raise ValueError("CA certificate is not a CA (basicConstraints CA:TRUE is missing)")
    now = datetime.datetime.now(datetime.UTC)
    if not cert.not_valid_before_utc <= now <= cert.not_valid_after_utc:
        raise ValueError(
            f"CA certificate is not valid now (valid {cert.not_valid_before_utc} to {cert.not_valid_after_utc})"
        )


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _usage(*, ca: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=ca,
        crl_sign=ca,
        encipher_only=False,
        decipher_only=False,
    )


def make_ca(common_name: str = "trainer-policy-provider-ca", days: int = 365) -> KeyPair:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(_name(common_name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_usage(ca=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def _san(names: list[str]) -> x509.SubjectAlternativeName:
    entries: list[x509.GeneralName] = []
    for name in names:
        try:
            entries.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            entries.append(x509.DNSName(name))
    return x509.SubjectAlternativeName(entries)


def issue(ca: KeyPair, common_name: str, names: list[str], *, client: bool = False, days: int = 365) -> KeyPair:
    """A leaf certificate signed by `ca`: serverAuth for `names` (DNS or IP), or clientAuth."""
    ca_cert = x509.load_pem_x509_certificate(ca.cert_pem)
    ca_key = serialization.load_pem_private_key(ca.key_pem, password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
        raise ValueError("CA key must be an EC key")
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    usage = ExtendedKeyUsageOID.CLIENT_AUTH if client else ExtendedKeyUsageOID.SERVER_AUTH
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_usage(ca=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_cert.public_key()), critical=False)
    )
    if names:
        builder = builder.add_extension(_san(names), critical=False)
    return KeyPair(builder.sign(ca_key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM), _key_pem(key))


def service_names(service: str, namespace: str) -> list[str]:
    """DNS names a Service is reached by inside the cluster."""
    return [service, f"{service}.{namespace}", f"{service}.{namespace}.svc", f"{service}.{namespace}.svc.cluster.local"]


def ca_bundle(ca_cert_pem: bytes) -> str:
    """The Provider object's `spec.caBundle`: base64 of the CA certificate PEM."""
    return base64.b64encode(ca_cert_pem).decode()
