"""The parents' control plane: requests and schedules sent to devices over MQTT, their acks, activation, the family's rules."""
