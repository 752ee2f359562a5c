"""API keys of ``payledger serve``: a file of hashed keys, each naming the merchants it may read.

The file is JSON, written by ``payledger api-key add`` (or by hand)::

    {"keys": [
      {"name": "ui-backend", "sha256": "<hex digest of the key>", "merchants": "*"},
      {"name": "portal-m_1", "sha256": "<hex digest of the key>", "merchants": ["m_1", "m_2"]}
    ]}

Only SHA-256 digests are stored: a key is 32 random bytes (``secrets.token_urlsafe``), so a fast
hash is enough, and the file reveals no key. A client sends its key as ``Authorization: Bearer
<key>``. The server never logs a key: uvicorn's access log writes the request line only, and no
message of this module or of ``payledger.serve`` contains one.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import dataclass
from pathlib import Path

from payledger.files import write_atomically
from payledger.history import check_key

#: The variable ``payledger serve`` reads the key file's path from when ``--api-keys`` is not given.
KEY_FILE_VARIABLE = "PAYLEDGER_API_KEYS"
#: ``merchants`` value of a key that may read every merchant (the UI's backend).
ALL_MERCHANTS = "*"
#: The prefix of the keys ``new_key`` makes, so that secret scanners can recognise them.
KEY_PREFIX = "plk_"


def digest(key: str) -> str:
    """The SHA-256 hex digest stored for ``key``."""
    return hashlib.sha256(key.encode()).hexdigest()


@dataclass(frozen=True)
class ApiKey:
    """One key of the file: its ``name`` (for operators; never a secret), the ``sha256`` digest of
    the key, and the ``merchants`` it may read (None: all)."""

    name: str
    sha256: str
    merchants: frozenset[str] | None

    def may_read(self, merchant_id: str) -> bool:
        """Whether this key may read ``merchant_id``'s balances."""
        return self.merchants is None or merchant_id in self.merchants

    def as_dict(self) -> dict[str, object]:
        """The key's entry in the file."""
        return {"name": self.name, "sha256": self.sha256, "merchants": ALL_MERCHANTS if self.merchants is None else sorted(self.merchants)}


class ApiKeys:
    """The keys of one file, looked up by digest."""

    def __init__(self, keys: list[ApiKey]) -> None:
        self.keys = keys
        self._by_digest = {key.sha256: key for key in keys}

    def __len__(self) -> int:
        return len(self.keys)

    @classmethod
    def load(cls, path: Path) -> ApiKeys:
        """The keys of the file at ``path``; an empty set when it does not exist. Raises
        ``ValueError`` naming the entry when the file is not a key file (not JSON, no ``keys``
        list, an entry without a name, a digest that is not 64 hex digits, a malformed merchant id,
        two entries with one digest)."""
        try:
            data = json.loads(Path(path).read_text())
        except FileNotFoundError:
            return cls([])
        except ValueError as error:
            raise ValueError(f"{path} is not JSON: {error}") from error
        if not isinstance(data, dict) or not isinstance(data.get("keys"), list):
            raise ValueError(f'{path} is not an API key file: it needs {{"keys": [...]}}')
        keys = [_entry(path, position, entry) for position, entry in enumerate(data["keys"])]
        if len({key.sha256 for key in keys}) != len(keys):
            raise ValueError(f"{path} lists one key digest twice")
        return cls(keys)

    def authenticate(self, presented: str | None) -> ApiKey | None:
        """The key ``presented`` (the bearer token as sent), or None when it is missing or unknown."""
        if not presented:
            return None
        return self._by_digest.get(digest(presented))


def _entry(path: Path, position: int, entry: object) -> ApiKey:
    where = f"{path}: keys[{position}]"
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not entry["name"]:
        raise ValueError(f"{where} needs a name")
    sha256 = entry.get("sha256")
    if not isinstance(sha256, str) or len(sha256) != 64 or any(c not in "0123456789abcdef" for c in sha256):
        raise ValueError(f"{where} ({entry['name']}) needs sha256, 64 lowercase hex digits")
    merchants = entry.get("merchants")
    if merchants == ALL_MERCHANTS:
        return ApiKey(entry["name"], sha256, None)
    if not isinstance(merchants, list) or not merchants:
        raise ValueError(f'{where} ({entry["name"]}) needs merchants: "*" or a list of merchant ids')
    for merchant_id in merchants:
        try:
            check_key(str(merchant_id))
        except ValueError as error:
            raise ValueError(f"{where} ({entry['name']}): {error}") from None
    return ApiKey(entry["name"], sha256, frozenset(str(m) for m in merchants))


def new_key(path: Path, name: str, merchants: list[str] | None) -> str:
    """Make a key that may read ``merchants`` (None: all), add its digest to the file at ``path``
    (mode 0600, replaced whole: ``files.write_atomically``) and return the
    key, which is stored nowhere. Raises ``ValueError`` for a malformed merchant id, a name the
    file already has, or a file that is not a key file."""
    for merchant_id in merchants or ():
        check_key(merchant_id)
    keys = ApiKeys.load(path)
    if any(key.name == name for key in keys.keys):
        raise ValueError(f"{path} already has a key named {name}")
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    entries = [*keys.keys, ApiKey(name, digest(key), None if merchants is None else frozenset(merchants))]
    write_atomically(path, json.dumps({"keys": [entry.as_dict() for entry in entries]}, indent=1) + "\n", mode=0o600)
    return key
