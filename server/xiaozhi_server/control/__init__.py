"""The parents' control plane: the MQTT broker, control requests to devices, schedules."""
