# The parents' control plane over MQTT, loaded only with mqtt.url.
