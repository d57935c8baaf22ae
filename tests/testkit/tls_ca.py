"""A throwaway certificate authority made at run time (the `cryptography`
package), and the server certificates the TLS tests present:

    ca = TestCA(tmp_dir)          # ca.pem: what the board trusts
    ca.bundle_pem                 # another CA's certificate, then ca.pem: a bundle of two
    ca.good                       # (cert.pem, key.pem) for 127.0.0.1 and localhost
    ca.wrong_host                 # signed by the CA, for another host name
    ca.self_signed                # for 127.0.0.1, signed by itself
    ca.expired                    # signed by the CA, for 127.0.0.1, expired yesterday

EC P-256 keys: quick to make, and what the board's mbedtls handles fast.
"""
import datetime
import ipaddress
import os

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

HOSTS = ("127.0.0.1", "localhost")


def _name(cn):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _san(hosts):
    names = []
    for h in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(h)))
        except ValueError:
            names.append(x509.DNSName(h))
    return x509.SubjectAlternativeName(names)


class TestCA:
    __test__ = False    # not a test class, whatever pytest thinks of its name

    def __init__(self, directory):
        self.dir = str(directory)
        os.makedirs(self.dir, exist_ok=True)
        now = datetime.datetime.now(datetime.timezone.utc)
        self._now = now
        self._key, self._cert = self._authority("xiaozhi test CA")
        ca = self._cert.public_bytes(serialization.Encoding.PEM)
        self.ca_pem = self._write("ca.pem", ca)
        other = self._authority("another test CA")[1].public_bytes(serialization.Encoding.PEM)
        self.bundle_pem = self._write("bundle.pem", other + ca)
        self.good = self._leaf("good", HOSTS)
        self.wrong_host = self._leaf("wrong-host", ("other.example",))
        self.self_signed = self._leaf("self-signed", HOSTS, self_signed=True)
        self.expired = self._leaf("expired", HOSTS, days=(-30, -1))

    def _authority(self, name):
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (x509.CertificateBuilder().subject_name(_name(name)).issuer_name(_name(name))
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(self._now - datetime.timedelta(days=1))
                .not_valid_after(self._now + datetime.timedelta(days=30))
                .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                             content_commitment=False, key_encipherment=False,
                                             data_encipherment=False, key_agreement=False,
                                             encipher_only=False, decipher_only=False), critical=True)
                .sign(key, hashes.SHA256()))
        return key, cert

    def _write(self, name, data):
        path = os.path.join(self.dir, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def _leaf(self, name, hosts, self_signed=False, days=(-1, 30)):
        key = ec.generate_private_key(ec.SECP256R1())
        issuer, signer = (_name(hosts[0]), key) if self_signed else (self._cert.subject, self._key)
        cert = (x509.CertificateBuilder().subject_name(_name(hosts[0])).issuer_name(issuer)
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(self._now + datetime.timedelta(days=days[0]))
                .not_valid_after(self._now + datetime.timedelta(days=days[1]))
                .add_extension(_san(hosts), critical=False)
                .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
                .sign(signer, hashes.SHA256()))
        return (self._write(name + ".pem", cert.public_bytes(serialization.Encoding.PEM)),
                self._write(name + ".key", key.private_bytes(serialization.Encoding.PEM,
                                                             serialization.PrivateFormat.PKCS8,
                                                             serialization.NoEncryption())))
