"""The nodes sharing a control store, and which device of a household answers a wake word."""
