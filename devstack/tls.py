"""A throwaway CA and broker certificate for the TLS/SASL_SSL dev stacks.

Why its own CA: the exporter (librdkafka) and Burrow (Go's crypto/tls) must verify the broker's
chain *and* its name, as they would in production, so the certificate names exactly the address
the brokers advertise (IP SAN ``127.0.0.1``) and nothing else: a client that dials ``localhost``
fails hostname verification, which is how the tests prove verification is on.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

__all__ = ["DevCerts", "make_certs"]


@dataclass(frozen=True)
class DevCerts:
    """PEM files: the CA (trust it), the broker's key+chain (one file, Kafka's PEM keystore),
    and an unrelated CA (trusting it must fail)."""

    ca: Path
    keystore: Path
    other_ca: Path


def make_certs(directory: Path, ip: str = "127.0.0.1") -> DevCerts:
    """A CA valid for two days, and a broker certificate it signed for ``ip`` only."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    valid = (now - datetime.timedelta(hours=1), now + datetime.timedelta(days=2))

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    def ca(cn: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
        key = ec.generate_private_key(ec.SECP256R1())
        usage = x509.KeyUsage(
            digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
            key_encipherment=False, data_encipherment=False, key_agreement=False,
            encipher_only=False, decipher_only=False,
        )  # fmt: skip
        cert = (
            x509.CertificateBuilder().subject_name(name(cn)).issuer_name(name(cn))
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(valid[0]).not_valid_after(valid[1])
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(usage, critical=True)
            .sign(key, hashes.SHA256())
        )  # fmt: skip
        return key, cert

    ca_key, ca_cert = ca("freshness-tracker devstack CA")
    _, other = ca("an unrelated CA")
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder().subject_name(name("kafka.devstack")).issuer_name(ca_cert.subject)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(valid[0]).not_valid_after(valid[1])
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(ip))]),
                       critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    pem = serialization.Encoding.PEM
    certs = DevCerts(directory / "ca.pem", directory / "broker-keystore.pem",
                     directory / "other-ca.pem")  # fmt: skip
    certs.ca.write_bytes(ca_cert.public_bytes(pem))
    certs.other_ca.write_bytes(other.public_bytes(pem))
    key_pem = key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())  # fmt: skip
    certs.keystore.write_bytes(key_pem + cert.public_bytes(pem) + ca_cert.public_bytes(pem))
    return certs
