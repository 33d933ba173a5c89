"""Receipt stores: one interface (:mod:`admiss.receipts.store`), one module per backend.

``[serve] store`` (or ``--store``) picks the backend: a ``postgresql://`` URL is a PostgreSQL
database (:mod:`admiss.receipts.postgres`, the ``postgres`` extra), anything else the path
of an SQLite file (:mod:`admiss.receipts.sqlite`, the default). Serve, savings and
``admiss receipts`` all open stores here.
"""

from __future__ import annotations

from pathlib import Path

from admiss.receipts import sqlite
from admiss.receipts.store import (DamagedRow, GateKey, ReceiptStore, StoreBusy, StoreError, StoreWriter,
                                   call_key, parse_since, utc_timestamp)

__all__ = ["DamagedRow", "GateKey", "ReceiptStore", "StoreBusy", "StoreError", "StoreWriter", "call_key", "is_url",
           "open_store", "open_writer", "parse_since", "utc_timestamp"]

URL_SCHEMES = ("postgresql://", "postgres://")


def is_url(where: str | Path) -> bool:
    """Whether a store location names a PostgreSQL database rather than an SQLite file."""
    return isinstance(where, str) and where.startswith(URL_SCHEMES)


def _postgres():
    # Imported only for a postgresql:// store: psycopg is an extra, and slow to import.
    try:
        from admiss.receipts import postgres
    except ImportError as exc:
        raise StoreError(f"a postgresql:// receipt store needs the postgres extra: pip install 'admiss[postgres]' "
                         f"({exc})") from None
    return postgres


def open_store(where: str | Path, create: bool = True, read_only: bool = False) -> ReceiptStore:
    """The store at ``where`` (a postgresql:// URL, else an SQLite path), made when
    ``create`` and missing, never written when ``read_only``; StoreError when it cannot be
    opened or is not a receipt store."""
    if is_url(where):
        return _postgres().open_store(str(where), create, read_only)
    return sqlite.open_store(where, create, read_only)


def open_writer(where: str | Path) -> StoreWriter:
    """The gateway's group-commit writer to the store at ``where`` (made when missing)."""
    if is_url(where):
        postgres = _postgres()
        return postgres.PostgresWriter(postgres.open_store(str(where)))
    return sqlite.SQLiteWriter(sqlite.open_store(where))
