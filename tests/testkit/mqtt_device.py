"""A wire-level stand-in for the board's MQTT side: a plain aiomqtt client
that subscribes to snlp/v1/{id}/cmd/#, checks every request with the
generated validator, and answers it as the test says (`answer`: accept by
default, refuse, fail, or stay silent) on rpt/ack with the generated builder.

For tests whose subject is the server's side of the wire: what it does with
the ack or report the test chose, another device's credentials, a payload
no board would send. A test about what the board does with a request (runs
it once, answers a repeat) takes testkit/control_board.py, the firmware's own
request handling.

    async with await MqttDevice.provisioned(server, "dev1") as dev:   # its own credentials
        req = await dev.next_request()        # (topic, request dict)
        dev.answer = lambda req: None         # stop acking (an offline device)
    MqttDevice(broker_port, "dev1")           # anonymous, for a broker that allows it
    MqttDevice(1883, "dev1", host="10.77.0.3", persistent=True)   # a session the broker keeps while it is away
"""
import asyncio

import aiomqtt

from xiaozhi_server.broker.mqtt import settle
from xiaozhi_server import protocol as proto


def accept(request):
    return proto.mqtt_ack(request["header"]["req_id"], True, proto.ACK_ACCEPTED, "accepted",
                          action=request["action"], device_id=request["header"]["device_id"])


async def credentials(server, device_id):
    """(username, password) the running server gives this device (it is provisioned)."""
    creds = await server.control.devices.provision(device_id)
    return creds["mqtt"]["username"], creds["mqtt"]["password"]


def server_login(server):
    """(username, password) of the server's own MQTT user: what the parents' side may publish."""
    return server.broker.username, server.broker.password


class MqttDevice:
    def __init__(self, port, device_id, answer=accept, username=None, password=None, identifier=None,
                 host="127.0.0.1", persistent=False):
        self.host = host
        self.persistent = persistent    # clean_session off: QoS 1 requests wait in the broker for it
        self.port = port
        self.device_id = device_id
        self.identifier = identifier or "dev-" + device_id
        self.username, self.password = username, password
        self.answer = answer          # request -> ack dict, or None for no ack
        self.requests = asyncio.Queue()
        self.invalid = []             # (topic, reason) of anything that failed the schema
        self._client = None
        self._task = None

    @classmethod
    async def provisioned(cls, server, device_id, login_as=None, **kw):
        """A device on the server's broker with its credentials (or with the
        credentials of device `login_as`: a device posing as another)."""
        user, password = await credentials(server, login_as or device_id)
        if login_as:
            kw.setdefault("identifier", "dev-%s-as-%s" % (login_as, device_id))
        return cls(server.broker.port, device_id, username=user, password=password, **kw)

    async def __aenter__(self):
        self._client = aiomqtt.Client(self.host, self.port, identifier=self.identifier,
                                      username=self.username, password=self.password,
                                      clean_session=False if self.persistent else None)
        await self._client.__aenter__()
        await self._client.subscribe(proto.topic(proto.TOPIC_CMD_CTL, self.device_id).rsplit("/", 1)[0] + "/#", qos=1)
        self._task = asyncio.create_task(self._read())
        return self

    async def __aexit__(self, *exc):
        self._task.cancel()
        try:
            await self._task
        except (asyncio.CancelledError, aiomqtt.MqttError):
            pass
        try:
            await self._client.__aexit__(None, None, None)
        except aiomqtt.MqttError:
            pass
        settle(self._client)

    async def _read(self):
        async for message in self._client.messages:
            try:
                request = proto.decode_mqtt_request(message.payload)
            except proto.ProtoError as e:
                self.invalid.append((message.topic.value, e.reason))
                continue
            await self.requests.put((message.topic.value, request))
            ack = self.answer(request)
            if ack is not None:
                await self.publish_ack(ack)

    async def next_request(self, timeout=5):
        return await asyncio.wait_for(self.requests.get(), timeout)

    async def no_request(self, within=0.5):
        """True when nothing arrives within `within` seconds."""
        try:
            await asyncio.wait_for(self.requests.get(), within)
        except asyncio.TimeoutError:
            return True
        return False

    async def publish_ack(self, ack):
        await self.publish_raw(proto.topic(proto.TOPIC_RPT_ACK, self.device_id), proto.encode(ack).encode())

    async def publish_state(self, state):
        await self.publish_raw(proto.topic(proto.TOPIC_RPT_STATE, self.device_id), proto.encode(state).encode())

    async def publish_raw(self, topic, payload):
        await self._client.publish(topic, payload, qos=1)
