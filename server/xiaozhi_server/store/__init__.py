"""The control store: one record module per table family, over SQLite or PostgreSQL, with its migrations."""
