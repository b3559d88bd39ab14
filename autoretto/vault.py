"""The vault: secrets sealed with AES-256-GCM before they touch the disk (ARCHITECTURE.md §6).

One 32-byte master key per Autoretto home seals every account's token bundle. Each seal uses a
fresh 12-byte nonce and binds the bundle to its account (associated data), so a sealed blob
copied onto another account row, or altered by a single bit, is refused.

The master key lives in the system keyring when one is usable, otherwise in `<home>/vault.key`
created with mode 0600. Cron jobs usually have no keyring session, so a key kept in the keyring
is out of their reach: `AUTORETTO_VAULT=file` makes a home use the key file even where a keyring
works, and the sealed blob records where its key was kept so the error can say what happened.

Hosts that share one store (issue 26) must open each other's sealed accounts, so the key can
come from outside the home, the same on every host: `AUTORETTO_VAULT_KEY_FILE` names a key file
they share (mode 0600 or 0400, read-only is fine; made there, 0600, only when no secret is
sealed yet), and `AUTORETTO_VAULT_KEY` holds the key itself, base64 of 32 bytes (systemd's
`LoadCredential`, a secret store's environment). The variable wins over the file variable, and
either over the home's own key. The key id decides whether a key opens a blob, never the place
it records: a blob sealed with a home's `vault.key` opens with the same key given by either
variable, so a home moves to a shared key by copying its key file there. No error prints a key.

A sealed blob is `b"AR1" + place (b"K" keyring | b"F" file | b"E" the environment variable) +
key id (4 bytes) + nonce + sealed`.
"""

from __future__ import annotations

import base64
import hashlib
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import AutorettoError, UsageError

KEY_FILE_NAME = "vault.key"
KEYRING_SERVICE = "autoretto-vault"
VAULT_VARIABLE = "AUTORETTO_VAULT"  # auto (default) | file | keyring
#: a key file shared by every host, outside the home
KEY_FILE_VARIABLE = "AUTORETTO_VAULT_KEY_FILE"
#: the key itself, base64 of 32 bytes
KEY_VARIABLE = "AUTORETTO_VAULT_KEY"
#: the modes a shared key file may have: the owner's alone
SHARED_KEY_MODES = (0o600, 0o400)

_MAGIC = b"AR1"
_PLACES = {b"K": "keyring", b"F": "file", b"E": "environment"}
_NONCE_BYTES = 12
_KEY_BYTES = 32
_HEADER_BYTES = len(_MAGIC) + 1 + 4


class VaultError(AutorettoError):
    """The vault key is missing, unreadable or not the one the secrets were sealed with."""


@dataclass(frozen=True)
class KeyPlace:
    """Where a home's master key is kept, for `autoretto doctor`. Never holds the key."""

    kind: str  # "keyring" | "file" | "environment" | "none"
    detail: str  # the key file's path, the keyring backend's name, or the variable's name
    keyring_usable: bool
    keyring_name: str | None
    file_mode: str | None = None  # e.g. "0600" when the key is in a file
    variable: str | None = None  # the variable that chose it (AUTORETTO_VAULT_KEY[_FILE])


def key_file(home: Path) -> Path:
    return home / KEY_FILE_NAME


def _shared_key_file() -> Path | None:
    """The key file AUTORETTO_VAULT_KEY_FILE names, or None."""
    named = os.environ.get(KEY_FILE_VARIABLE, "").strip()
    return Path(named).expanduser() if named else None


def _key_from_variable() -> bytes | None:
    """The key AUTORETTO_VAULT_KEY holds, or None when it is unset. Never shows the value."""
    text = os.environ.get(KEY_VARIABLE)
    if text is None or not text.strip():
        return None
    key = _base64_key(text)
    if key is None:
        raise VaultError(
            f"{KEY_VARIABLE} is not a vault key (base64 of 32 bytes); set it to the key, e.g. the "
            f"content of a home's {KEY_FILE_NAME}"
        )
    return key


def _read_shared_key_file(path: Path) -> bytes | None:
    """The key in the file AUTORETTO_VAULT_KEY_FILE names (None when there is none yet),
    refused unless only its owner may read it."""
    try:
        mode = path.stat().st_mode & 0o777
    except FileNotFoundError:
        return None
    except OSError as error:
        raise VaultError(
            f"{path} ({KEY_FILE_VARIABLE}): cannot read the vault key "
            f"({error.strerror or type(error).__name__})"
        ) from None
    if mode not in SHARED_KEY_MODES:
        raise VaultError(
            f"{path} ({KEY_FILE_VARIABLE}) is mode {mode:04o}: a vault key must be readable by "
            f"its owner alone; run `chmod 600 {path}`"
        )
    return _read_key_file(path, variable=KEY_FILE_VARIABLE)


def _mode() -> str:
    mode = os.environ.get(VAULT_VARIABLE, "auto").strip().lower() or "auto"
    if mode not in ("auto", "file", "keyring"):
        raise UsageError(f'{VAULT_VARIABLE}="{mode}" is not one of auto, file, keyring')
    return mode


def usable_keyring() -> Any | None:
    """The system keyring backend when it can really store secrets, else None.

    The fail, null and empty chainer backends are what keyring falls back to where there is
    no keyring session (cron, a bare SSH login); they cannot hold our key.
    """
    try:
        import keyring
        from keyring.backends import chainer, fail, null
    except ImportError:
        return None
    try:
        backend = keyring.get_keyring()
    except Exception:  # a broken keyring configuration is the same as none
        return None
    if isinstance(backend, fail.Keyring | null.Keyring):
        return None
    if isinstance(backend, chainer.ChainerBackend) and not backend.backends:
        return None
    return backend


def _backend_name(backend: Any) -> str:
    return f"{type(backend).__module__}.{type(backend).__name__}"


def _keyring_user(home: Path) -> str:
    return str(home)


def _base64_key(text: str) -> bytes | None:
    """The 32-byte key `text` holds in base64, or None when it holds none."""
    try:
        key = base64.b64decode(text.strip(), validate=True)
    except (ValueError, TypeError):
        return None
    return key if len(key) == _KEY_BYTES else None


def _decode_key(text: str, *, where: str) -> bytes:
    key = _base64_key(text)
    if key is None:
        raise VaultError(
            f"{where}: the vault key is damaged (not 32 bytes of base64); restore it from a "
            "backup, or run `autoretto disconnect PLATFORM` and connect again"
        )
    return key


def _read_key_file(path: Path, *, variable: str | None = None) -> bytes | None:
    where = f"{path} ({variable})" if variable else str(path)
    try:
        text = path.read_text(encoding="ascii")
    except FileNotFoundError:
        return None
    except (PermissionError, UnicodeDecodeError, OSError) as error:
        raise VaultError(
            f"{where}: cannot read the vault key ({type(error).__name__}); it must be readable "
            "by the user that runs Autoretto (chmod 600, owned by that user)"
        ) from None
    return _decode_key(text, where=where)


def _read_keyring(backend: Any, home: Path) -> bytes | None:
    try:
        text = backend.get_password(KEYRING_SERVICE, _keyring_user(home))
    except Exception as error:  # a locked or broken keyring
        raise VaultError(
            f"the system keyring ({_backend_name(backend)}) refused to give the vault key "
            f"({type(error).__name__}); unlock it, or set {VAULT_VARIABLE}=file and reconnect"
        ) from None
    return None if text is None else _decode_key(text, where="the system keyring")


def _create_key_file(path: Path) -> bytes:
    """Write a new key to `path` (0600), atomically; if another process won, use its key."""
    key = secrets.token_bytes(_KEY_BYTES)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "w", encoding="ascii") as writer:
            writer.write(base64.b64encode(key).decode("ascii") + "\n")
            writer.flush()
            os.fsync(writer.fileno())
        try:
            os.link(partial, path)  # fails if it exists: never replace someone else's key
        except FileExistsError:
            existing = _read_key_file(path)
            assert existing is not None
            return existing
    finally:
        partial.unlink(missing_ok=True)
    return key


class Vault:
    """Seals and opens secrets of one Autoretto home."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self._key: tuple[bytes, bytes] | None = None  # (place byte, key)

    # -- where the key is --------------------------------------------------------------

    def place(self) -> KeyPlace:
        """Where the key is (or would be created), without creating or revealing it."""
        backend = usable_keyring() if _mode() != "file" else None
        keyring_name = _backend_name(backend) if backend is not None else None
        if os.environ.get(KEY_VARIABLE, "").strip():
            return KeyPlace(
                "environment", KEY_VARIABLE, backend is not None, keyring_name,
                variable=KEY_VARIABLE,
            )  # fmt: skip
        shared = _shared_key_file()
        if shared is not None:
            try:
                mode: str | None = f"{shared.stat().st_mode & 0o777:04o}"
            except OSError:
                mode = None  # made at the first `autoretto connect`, or unreadable (doctor says)
            return KeyPlace(
                "file" if mode else "none", str(shared), backend is not None, keyring_name,
                mode, KEY_FILE_VARIABLE,
            )  # fmt: skip
        path = key_file(self.home)
        if path.exists():
            mode = f"{path.stat().st_mode & 0o777:04o}"
            return KeyPlace("file", str(path), backend is not None, keyring_name, mode)
        if backend is not None:
            try:
                found = _read_keyring(backend, self.home)
            except VaultError:
                found = None
            if found is not None:
                return KeyPlace("keyring", keyring_name or "", True, keyring_name)
        return KeyPlace("none", "", backend is not None, keyring_name)

    def _find_key(self) -> tuple[bytes, bytes] | None:
        key = _key_from_variable()
        if key is not None:
            return b"E", key
        shared = _shared_key_file()
        if shared is not None:
            key = _read_shared_key_file(shared)
            return None if key is None else (b"F", key)
        mode = _mode()
        path = key_file(self.home)
        if mode != "keyring":
            key = _read_key_file(path)
            if key is not None:
                return b"F", key
        if mode != "file":
            backend = usable_keyring()
            if backend is not None:
                key = _read_keyring(backend, self.home)
                if key is not None:
                    return b"K", key
        return None

    def key(self, *, create: bool) -> tuple[bytes, bytes]:
        """The (place, key) pair; creates a key only when `create` (no sealed secrets yet)."""
        if self._key is not None:
            return self._key
        found = self._find_key()
        if found is None:
            if not create:
                raise self._missing_key_error(None)
            found = self._create_key()
        self._key = found
        return found

    def _create_key(self) -> tuple[bytes, bytes]:
        shared = _shared_key_file()
        if shared is not None:  # the first home to seal a secret makes the shared key
            key = _create_key_file(shared)
            _read_shared_key_file(shared)  # its mode checked as every later read checks it
            return b"F", key
        mode = _mode()
        backend = usable_keyring() if mode != "file" else None
        if mode == "keyring" and backend is None:
            raise VaultError(
                f"{VAULT_VARIABLE}=keyring but there is no usable system keyring here "
                f"(cron jobs usually have none); unset it to use {key_file(self.home)}"
            )
        if backend is not None:
            key = secrets.token_bytes(_KEY_BYTES)
            try:
                backend.set_password(
                    KEYRING_SERVICE, _keyring_user(self.home), base64.b64encode(key).decode()
                )
                stored = _read_keyring(backend, self.home)
            except Exception:
                stored = None  # a keyring that cannot store: fall back to the file
            if stored is not None:
                return b"K", stored
        return b"F", _create_key_file(key_file(self.home))

    def _missing_key_error(self, sealed_in: str | None) -> VaultError:
        path = key_file(self.home)
        shared = _shared_key_file()
        if shared is not None:
            return VaultError(
                f"cannot open the connected accounts: the vault key file {shared} "
                f"({KEY_FILE_VARIABLE}) is missing; copy the key the accounts were sealed with "
                "there (chmod 600), or run `autoretto disconnect PLATFORM` and `autoretto "
                "connect PLATFORM` again"
            )
        if sealed_in == "environment":
            return VaultError(
                "cannot open the connected accounts: they were sealed with the key of "
                f"{KEY_VARIABLE}, which is not set here; set {KEY_VARIABLE} (or "
                f"{KEY_FILE_VARIABLE}) to that key for every run, or run `autoretto disconnect "
                "PLATFORM` and connect again"
            )
        if sealed_in == "keyring":
            where = (
                "the secrets were sealed with a key kept in the system keyring, and this "
                "process cannot reach it (cron jobs usually have no keyring session)"
            )
            fix = (
                f"run Autoretto where that keyring is unlocked, or set {VAULT_VARIABLE}=file "
                "for every run and reconnect"
            )
        else:
            where = f"the vault key {path} is missing"
            fix = "restore it from your backup (it sits beside autoretto.db)"
        return VaultError(
            f"cannot open the connected accounts: {where}; {fix}, or run "
            "`autoretto disconnect PLATFORM` and `autoretto connect PLATFORM` again"
        )

    def _named(self, place: bytes) -> str:
        """Where the key in use came from, in a person's words (never the key)."""
        if place == b"E":
            return f"in {KEY_VARIABLE}"
        shared = _shared_key_file()
        if shared is not None:
            return f"in {shared} ({KEY_FILE_VARIABLE})"
        if place == b"K":
            return "in the system keyring"
        return f"in {key_file(self.home)} (was it replaced?)"

    # -- sealing ------------------------------------------------------------------------

    def seal(self, secret: bytes, associated: str, *, create_key: bool = False) -> bytes:
        """Encrypt `secret` bound to `associated` (an account's id). Fresh nonce every time."""
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        place, key = self.key(create=create_key)
        nonce = secrets.token_bytes(_NONCE_BYTES)
        header = _MAGIC + place + _key_id(key)
        sealed = AESGCM(key).encrypt(nonce, secret, header + associated.encode("utf-8"))
        return header + nonce + sealed

    def unseal(self, blob: bytes, associated: str) -> bytes:
        """Decrypt a blob made by `seal` for the same `associated`. Raises VaultError."""
        from cryptography.exceptions import InvalidTag
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        blob = bytes(blob)
        if len(blob) < _HEADER_BYTES + _NONCE_BYTES + 16 or not blob.startswith(_MAGIC):
            raise VaultError("a sealed secret is damaged (not a vault blob); reconnect the account")
        header = blob[:_HEADER_BYTES]
        sealed_in = _PLACES.get(blob[len(_MAGIC) : len(_MAGIC) + 1])
        found = self._key or self._find_key()
        if found is None:
            raise self._missing_key_error(sealed_in)
        self._key = found
        key = found[1]
        if header[-4:] != _key_id(key):
            raise VaultError(
                f"the vault key {self._named(found[0])} is not the one these secrets were sealed "
                "with; give the right key, or reconnect the account"
            )
        nonce = blob[_HEADER_BYTES : _HEADER_BYTES + _NONCE_BYTES]
        try:
            return AESGCM(key).decrypt(
                nonce, blob[_HEADER_BYTES + _NONCE_BYTES :], header + associated.encode("utf-8")
            )
        except InvalidTag:
            raise VaultError(
                "a sealed secret was altered or belongs to another account; it was refused "
                "(reconnect the account)"
            ) from None


def _key_id(key: bytes) -> bytes:
    return hashlib.sha256(b"autoretto-key-id" + key).digest()[:4]
