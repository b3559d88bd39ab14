"""The store's helpers under their old name: everything here lives in `autoretto.ledger.store`
now (the ledger is the only package with SQL). Kept so that code not yet moved into the ledger,
and the tests, go on importing from here."""

from .ledger.store import *  # noqa: F403
from .ledger.store import (  # noqa: F401  (the private names some tests use)
    MIGRATIONS,
    OUR_TABLES,
    SCHEMA_VERSION,
    Store,
    _import_sqlite_utils,
    dumps,
    execute,
    loads,
    open_database,
    row,
    rows,
    transaction,
)
