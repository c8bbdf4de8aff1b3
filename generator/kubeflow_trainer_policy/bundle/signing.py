"""OPA bundle signatures: `.signatures.json` = {"signatures": [<JWT>]}, the JWT listing every file's hash.

Hashes follow OPA (v1/bundle/hash.go): raw bytes for policies; for `.manifest`, `data.json` and
`data.yaml` the parsed document, walked with object keys sorted and primitives JSON-encoded
(Go's encoder without HTML escaping; strings with control characters other than \n, \r, \t or with
U+2028/U+2029 would be escaped differently by Go, and this project's manifests hold none).
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass
from typing import Any

import yaml
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature

from kubeflow_trainer_policy.bundle.build import SIGNATURES

STRUCTURED = ("data.json", "data.yaml", ".manifest", SIGNATURES)
ALGORITHMS = {"RS256": 32, "RS384": 48, "RS512": 64, "ES256": 32, "ES384": 48, "ES512": 66}
_HASHES = {"256": hashes.SHA256, "384": hashes.SHA384, "512": hashes.SHA512}


class SignatureError(Exception):
    """The bundle's signature does not verify; the message says which file or check failed."""


class KeyFileError(ValueError):
    """The PEM key given to sign or verify cannot be used (not PEM, encrypted, wrong type or curve)."""


class BundleFileError(ValueError):
    """A structured file of the bundle (.manifest, data.json, data.yaml) does not parse, so it cannot be hashed."""


CURVES = {"ES256": "secp256r1", "ES384": "secp384r1", "ES512": "secp521r1"}
"""The curve each ES algorithm is defined for (RFC 7518 3.4): P-256, P-384, P-521."""


def _encode_primitive(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def _walk(value: Any, out: list[bytes]) -> None:
    if isinstance(value, dict):
        out.append(b"{")
        for i, key in enumerate(sorted(value)):
            if i:
                out.append(b",")
            out += [_encode_primitive(key), b":"]
            _walk(value[key], out)
        out.append(b"}")
    elif isinstance(value, list):
        out.append(b"[")
        for i, item in enumerate(value):
            if i:
                out.append(b",")
            _walk(item, out)
        out.append(b"]")
    else:
        out.append(_encode_primitive(value))


def file_hash(name: str, content: bytes) -> str:
    if name.rsplit("/", 1)[-1] in STRUCTURED:
        try:
            document = yaml.safe_load(content) if name.endswith(".yaml") else json.loads(content)
            parts: list[bytes] = []
            _walk(document, parts)
        except (ValueError, yaml.YAMLError, RecursionError) as exc:
            kind = "YAML" if name.endswith(".yaml") else "JSON"
            raise BundleFileError(f"{name} is not valid {kind}: {' '.join(str(exc).split())}") from exc
        return hashlib.sha256(b"".join(parts)).hexdigest()
    return hashlib.sha256(content).hexdigest()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass(frozen=True)
class SigningKey:
    algorithm: str
    key: Any

    @classmethod
    def from_pem(cls, pem: bytes, algorithm: str) -> SigningKey:
        if algorithm not in ALGORITHMS:
            raise KeyFileError(f"unsupported signing algorithm {algorithm} (use one of {', '.join(ALGORITHMS)})")
        try:
            key = serialization.load_pem_private_key(pem, password=None)
        except TypeError as exc:  # cryptography: "Password was not given but private key is encrypted"
            raise KeyFileError(
                "the key is encrypted: give an unencrypted PEM key (openssl pkey -in K -out K2)"
            ) from exc
        except ValueError as exc:
            raise KeyFileError(f"not a PEM private key: {' '.join(str(exc).split())}") from exc
        except UnsupportedAlgorithm as exc:
            raise KeyFileError(f"unsupported key type: {exc}") from exc
        _check_key_type(key, algorithm)
        return cls(algorithm, key)

    def sign(self, message: bytes) -> bytes:
        digest = _HASHES[self.algorithm[2:]]()
        if self.algorithm.startswith("RS"):
            return self.key.sign(message, padding.PKCS1v15(), digest)
        r, s = decode_dss_signature(self.key.sign(message, ec.ECDSA(digest)))
        size = ALGORITHMS[self.algorithm]
        return r.to_bytes(size, "big") + s.to_bytes(size, "big")


def _check_key_type(key: Any, algorithm: str) -> None:
    wants_rsa = algorithm.startswith("RS")
    is_ec = isinstance(key, ec.EllipticCurvePrivateKey | ec.EllipticCurvePublicKey)
    if wants_rsa != isinstance(key, rsa.RSAPrivateKey | rsa.RSAPublicKey) or (not wants_rsa and not is_ec):
        raise KeyFileError(f"the key does not fit {algorithm} (RS* needs an RSA key, ES* an EC key)")
    if is_ec and key.curve.name != CURVES[algorithm]:
        raise KeyFileError(f"the key's curve {key.curve.name} does not fit {algorithm} (it needs {CURVES[algorithm]})")


def signed_token(files: dict[str, bytes], key: SigningKey, key_id: str, scope: str = "") -> str:
    payload: dict[str, Any] = {
        "files": [
            {"name": name, "hash": file_hash(name, files[name]), "algorithm": "SHA-256"}
            for name in sorted(files)
            if name != SIGNATURES
        ],
        "keyid": key_id,
    }
    if scope:
        payload["scope"] = scope
    header = {"alg": key.algorithm, "kid": key_id, "typ": "JWT"}
    signing_input = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(payload).encode())}"
    return f"{signing_input}.{_b64(key.sign(signing_input.encode()))}"


def signatures_document(token: str) -> bytes:
    return (json.dumps({"signatures": [token]}, indent=2) + "\n").encode()


def verify_files(files: dict[str, bytes], public_pem: bytes, key_id: str = "", scope: str = "") -> dict[str, Any]:
    """Checks as OPA does at activation; returns the JWT payload. Raises SignatureError."""
    if SIGNATURES not in files:
        raise SignatureError(f"{SIGNATURES} is missing: the bundle is not signed")
    try:
        signatures = json.loads(files[SIGNATURES]).get("signatures")
    except (ValueError, AttributeError) as exc:
        raise SignatureError(f"{SIGNATURES}: not a JSON object with `signatures`") from exc
    if not isinstance(signatures, list) or len(signatures) != 1 or not isinstance(signatures[0], str):
        raise SignatureError(f"{SIGNATURES}: expected exactly one JWT")
    payload = _verify_token(signatures[0], public_pem, key_id)
    if payload.get("scope", "") != scope:
        raise SignatureError("scope mismatch")
    files_claim = payload.get("files")
    if not isinstance(files_claim, list):
        raise SignatureError("the JWT payload has no `files` list")
    listed = {f["name"]: f for f in files_claim if isinstance(f, dict) and isinstance(f.get("name"), str)}
    for name, content in sorted(files.items()):
        if name == SIGNATURES:
            continue
        entry = listed.pop(name, None)
        if entry is None:
            raise SignatureError(f"file {name} not included in bundle signature")
        if entry.get("algorithm") != "SHA-256":
            raise SignatureError(f"{name}: unsupported hashing algorithm {entry.get('algorithm')!r}")
        try:
            actual = file_hash(name, content)
        except BundleFileError as exc:
            raise SignatureError(str(exc)) from exc
        if entry.get("hash") != actual:
            raise SignatureError(f"{name}: digest mismatch (want: {entry.get('hash')}, got: {actual})")
    if listed:
        missing = ", ".join(sorted(listed))
        raise SignatureError(f"file(s) listed in the signature are missing from the bundle: {missing}")
    return payload


def load_public_key(public_pem: bytes) -> Any:
    """The verification key; KeyFileError when it is not a PEM RSA or EC public key."""
    try:
        key = serialization.load_pem_public_key(public_pem)
    except (ValueError, UnsupportedAlgorithm) as exc:
        raise KeyFileError(f"not a PEM public key: {' '.join(str(exc).split())}") from exc
    if not isinstance(key, rsa.RSAPublicKey | ec.EllipticCurvePublicKey):
        raise KeyFileError("not an RSA or EC public key")
    return key


def _verify_token(token: str, public_pem: bytes, key_id: str) -> dict[str, Any]:
    try:
        header_b64, payload_b64, signature_b64 = token.split(".")
        header = json.loads(_unb64(header_b64))
        payload = json.loads(_unb64(payload_b64))
        signature = _unb64(signature_b64)
    except (ValueError, RecursionError) as exc:
        raise SignatureError(f"malformed JWT: {exc}") from exc
    if not isinstance(header, dict) or not isinstance(payload, dict):
        raise SignatureError("malformed JWT: header and payload must be JSON objects")
    algorithm = header.get("alg")
    if algorithm not in ALGORITHMS:
        raise SignatureError(f"unsupported JWT algorithm {algorithm!r}")
    token_key_id = header.get("kid") or payload.get("keyid") or ""
    if key_id and token_key_id != key_id:
        raise SignatureError(f"signed with key id {token_key_id!r}, expected {key_id!r}")
    public_key = load_public_key(public_pem)
    try:
        _check_key_type(public_key, algorithm)
    except KeyFileError as exc:
        raise SignatureError(str(exc)) from exc
    digest = _HASHES[algorithm[2:]]()
    signing_input = f"{header_b64}.{payload_b64}".encode()
    try:
        if algorithm.startswith("RS"):
            public_key.verify(signature, signing_input, padding.PKCS1v15(), digest)
        else:
            size = ALGORITHMS[algorithm]
            r, s = int.from_bytes(signature[:size], "big"), int.from_bytes(signature[size:], "big")
            public_key.verify(encode_dss_signature(r, s), signing_input, ec.ECDSA(digest))
    except InvalidSignature as exc:
        raise SignatureError("JWT signature does not verify with the given key") from exc
    return payload
