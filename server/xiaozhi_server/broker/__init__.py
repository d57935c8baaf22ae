"""The MQTT broker (started here or configured), its device logins, and the server's link to it."""
