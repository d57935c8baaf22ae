"""The parents' app on the control plane, for the HIL tests: publishes
requests to the board over MQTT (built with the generated builders) and
collects the board's acks.

    with ParentsApp(broker_port, device_id) as app:
        req_id = app.send("START_APP_TASK", {...})
        ack = app.ack(req_id, timeout=10)
"""
import json
import queue
import time

import paho.mqtt.client as mqtt

from xiaozhi_server import protocol as proto


class ParentsApp:
    def __init__(self, port, device_id):
        self.port = port
        self.device_id = device_id
        self.acks = queue.Queue()
        self._n = 0
        self._client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="hil-parents")
        self._client.on_message = lambda _c, _u, msg: self.acks.put(json.loads(msg.payload))

    def __enter__(self):
        self._client.connect("127.0.0.1", self.port)
        self._client.subscribe(proto.topic(proto.TOPIC_RPT_ACK, self.device_id), qos=1)
        self._client.loop_start()
        return self

    def __exit__(self, *exc):
        self._client.loop_stop()
        self._client.disconnect()

    def send(self, action, payload):
        self._n += 1
        req_id = "hil-%d" % self._n
        msg = proto.mqtt_request({"device_id": self.device_id, "req_id": req_id,
                                  "timestamp": int(time.time())}, action, payload)
        reason = proto.validate("mqtt.envelope", msg)
        assert reason is None, reason
        self._client.publish(proto.topic(proto.TOPIC_CMD_TASK, self.device_id), json.dumps(msg), qos=1)
        return req_id

    def ack(self, req_id, timeout=10):
        deadline = time.monotonic() + timeout
        while True:
            try:
                ack = self.acks.get(timeout=max(0.05, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError("no ack for %s within %s s" % (req_id, timeout))
            if ack.get("req_id") == req_id:
                return ack
