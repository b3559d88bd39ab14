"""The vault: AES-256-GCM seals bound to their account, the key in a keyring or a 0600 file."""

from __future__ import annotations

import stat
from pathlib import Path

import keyring
import pytest
from keyring.backend import KeyringBackend
from keyring.backends import fail

from autoretto.vault import KEY_FILE_NAME, Vault, VaultError


class MemoryKeyring(KeyringBackend):
    """A keyring that works, kept in memory (stands in for Secret Service / macOS Keychain)."""

    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.items: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.items.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.items[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        self.items.pop((service, username), None)


@pytest.fixture(autouse=True)
def no_keyring(monkeypatch: pytest.MonkeyPatch) -> None:
    """Like cron: no keyring session (and never the developer's real keyring)."""
    monkeypatch.delenv("AUTORETTO_VAULT", raising=False)
    previous = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    yield
    keyring.set_keyring(previous)


@pytest.fixture
def memory_keyring() -> MemoryKeyring:
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    return backend


def test_round_trip_with_a_key_file_made_0600(home: Path) -> None:
    vault = Vault(home)
    blob = vault.seal(b"refresh-token-1", "autoretto/youtube/default/UC1", create_key=True)
    assert b"refresh-token-1" not in blob
    assert Vault(home).unseal(blob, "autoretto/youtube/default/UC1") == b"refresh-token-1"
    key_file = home / KEY_FILE_NAME
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    place = Vault(home).place()
    assert (place.kind, place.detail, place.keyring_usable) == ("file", str(key_file), False)


def test_every_seal_uses_a_fresh_nonce(home: Path) -> None:
    vault = Vault(home)
    first = vault.seal(b"same secret", "account", create_key=True)
    second = vault.seal(b"same secret", "account")
    assert first != second
    assert vault.unseal(first, "account") == vault.unseal(second, "account") == b"same secret"


@pytest.mark.parametrize("position", [8, 20, -1])
def test_a_tampered_ciphertext_is_refused(home: Path, position: int) -> None:
    vault = Vault(home)
    blob = bytearray(vault.seal(b"secret", "account", create_key=True))
    blob[position] ^= 0x01
    with pytest.raises(VaultError, match=r"altered|another vault key|damaged"):
        vault.unseal(bytes(blob), "account")


def test_a_blob_moved_to_another_account_is_refused(home: Path) -> None:
    vault = Vault(home)
    blob = vault.seal(b"secret", "autoretto/youtube/default/UC1", create_key=True)
    with pytest.raises(VaultError, match="altered or belongs to another account"):
        vault.unseal(blob, "autoretto/youtube/default/UC2")


def test_a_missing_key_file_is_explained(home: Path) -> None:
    blob = Vault(home).seal(b"secret", "account", create_key=True)
    (home / KEY_FILE_NAME).unlink()
    with pytest.raises(VaultError) as caught:
        Vault(home).unseal(blob, "account")
    message = str(caught.value)
    assert str(home / KEY_FILE_NAME) in message
    assert "restore it from your backup" in message
    assert "autoretto connect" in message


def test_no_key_is_created_when_asked_not_to(home: Path) -> None:
    with pytest.raises(VaultError, match="missing"):
        Vault(home).seal(b"secret", "account", create_key=False)
    assert not (home / KEY_FILE_NAME).exists()


def test_a_damaged_key_file_is_explained(home: Path) -> None:
    home.mkdir(parents=True)
    (home / KEY_FILE_NAME).write_text("not base64 at all")
    with pytest.raises(VaultError, match="damaged"):
        Vault(home).seal(b"secret", "account")


def test_a_usable_keyring_holds_the_key(home: Path, memory_keyring: MemoryKeyring) -> None:
    blob = Vault(home).seal(b"secret", "account", create_key=True)
    assert not (home / KEY_FILE_NAME).exists()
    assert len(memory_keyring.items) == 1
    place = Vault(home).place()
    assert place.kind == "keyring" and place.keyring_usable
    assert Vault(home).unseal(blob, "account") == b"secret"


def test_a_keyring_key_out_of_reach_says_so(home: Path, memory_keyring: MemoryKeyring) -> None:
    blob = Vault(home).seal(b"secret", "account", create_key=True)
    keyring.set_keyring(fail.Keyring())  # now run "from cron"
    with pytest.raises(VaultError) as caught:
        Vault(home).unseal(blob, "account")
    assert "system keyring" in str(caught.value)
    assert "AUTORETTO_VAULT=file" in str(caught.value)


def test_autoretto_vault_file_keeps_the_key_out_of_the_keyring(
    home: Path, memory_keyring: MemoryKeyring, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AUTORETTO_VAULT", "file")
    Vault(home).seal(b"secret", "account", create_key=True)
    assert memory_keyring.items == {}
    assert (home / KEY_FILE_NAME).exists()
