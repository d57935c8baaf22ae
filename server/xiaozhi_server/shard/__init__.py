"""Worker processes that hold the voice sessions (pool.py in the primary,
worker.py in each worker); the control plane stays in the primary."""
