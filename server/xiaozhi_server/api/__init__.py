"""The parents' HTTP API, the console's sessions and the control CLI, on the request plane."""
