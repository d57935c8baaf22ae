"""The control store: Store (store.py) composed of one record class per
table family, all on one connection, over SQLite or PostgreSQL, with its
migrations."""
