"""A board's MQTT side as the firmware runs it: the firmware's own request
handling (firmware/app/control/control.py, its Control class) on CPython
under the host HAL, as the simulator runs the firmware, behind an MQTT
client. What a request gets (run, refused, its ack again, dropped) is the
firmware's decision, not a test's idea of it: when the board changes, these
tests change with it.

    board = ControlBoard(broker.port, "kid", tmp_path / "kid-nvs.json")
    board = await ControlBoard.provisioned(server, "kid")   # its credentials; NVS in a temp file
    async with board:                          # connected (again: the same board, its RAM kept)
        _, request = await board.next_request()   # each request that reached it
        board.runs                             # [(alarm_id, req_id, t)] of each request it ran
        board.received                         # the same of each request that reached it
        board.lose_acks = 1                    # its next ack is lost on the way (its link dropped)
        board.reboot()                         # power cycle: NVS kept (the ring of handled
                                               # req_ids), RAM lost (the acks it would repeat)

The board's actions (start a task, set or unset an alarm) are recorded and
accepted with the firmware's codes; what they do on the board (the gateway,
the alarm table) is the acceptance suite's and the entry tests' subject,
with the whole firmware in a process. The transport is aiomqtt (the
firmware's own client is tested in tests/host/control/test_board_mqtt_client.py);
`persistent` asks the broker to keep the session while the board is away.
"""
import json
import logging
import os
import tempfile
import time

from simkit import use_host_hal
from testkit import ROOT
from testkit.mqtt_device import MqttDevice
from xiaozhi_server import protocol as server_proto

use_host_hal()   # firmware/ and firmware/lib, found the way the simulator finds them

import proto  # noqa: E402  (the firmware's generated protocol code)
from app.control import control as fw_control  # noqa: E402
from hal.host.nvs import NVSFlash  # noqa: E402
from nvs_store import RecordStore  # noqa: E402

if not fw_control.__file__.startswith(str(ROOT / "firmware")):
    raise ImportError("app.control is %s, not the firmware's" % fw_control.__file__)


class _Log:
    """The firmware logger's interface onto Python's logging: the board's
    lines (its acks, the repeats it drops) go with a failing test's log, not
    onto the stdout of a bench that prints its figures there."""

    def __init__(self, name):
        self._log = logging.getLogger(name)

    def error(self, msg, *args):
        self._log.error(msg, *args)

    def warn(self, msg, *args):
        self._log.warning(msg, *args)

    def info(self, msg, *args):
        self._log.info(msg, *args)

    def debug(self, msg, *args):
        self._log.debug(msg, *args)

    def enabled(self, level):
        return True


fw_control._log = _Log("testkit.board.control")


class _Clock:
    """The board's RTC once the OTA answer set it: the host's time."""

    def time(self):
        return int(time.time())


class ControlBoard(MqttDevice):
    def __init__(self, port, device_id, nvs_path=None, runs=None, received=None, **kw):
        super().__init__(port, device_id, answer=None, **kw)
        if nvs_path is None:
            fd, nvs_path = tempfile.mkstemp(prefix="board-nvs-", suffix=".json")
            os.close(fd)
            os.unlink(nvs_path)     # a partition never written: the board's first boot
        self.nvs_path = str(nvs_path)
        # (alarm_id, req_id, t) of each request it ran, and of each that reached
        # it (repeats too): lists boards may share.
        self.runs = [] if runs is None else runs
        self.received = [] if received is None else received
        self.acks = []          # every ack the board published (decoded)
        self.lose_acks = 0      # this many of its next acks never reach the broker
        self.control = None
        self.reboot()

    def reboot(self):
        """A new boot: the Control built again over the same NVS partition."""
        records = RecordStore(NVSFlash(self.nvs_path).open("xiaozhi"))
        self.control = fw_control.Control(self.device_id, self._publish, {
            proto.ACTION_START_APP_TASK: self._run,
            proto.ACTION_SET_ALARM: self._run,
            proto.ACTION_UNSET_ALARM: self._run,
        }, _Clock(), records)

    async def _run(self, request):
        p = request["payload"]
        self.runs.append((p.get("alarm_id"), request["header"]["req_id"], time.monotonic()))
        if request["action"] == proto.ACTION_START_APP_TASK:
            return proto.ACK_ACCEPTED, "started", "%s started" % p.get("app_id")
        if request["action"] == proto.ACTION_SET_ALARM:
            return proto.ACK_ACCEPTED, "stored", "alarm %s stored" % p.get("alarm_id")
        return proto.ACK_ACCEPTED, "removed", "alarm %s removed" % p.get("alarm_id")

    async def _publish(self, topic, data, qos=1):
        if topic == self.control.ack_topic:
            if self.lose_acks:
                self.lose_acks -= 1
                return True     # sent, as far as the board knows
            self.acks.append(json.loads(data))
        await self.publish_raw(topic, data)
        return True

    async def _read(self):
        async for message in self._client.messages:
            payload = bytes(message.payload)
            try:
                request = server_proto.decode_mqtt_request(payload)
                self.received.append((request["payload"].get("alarm_id"), request["header"]["req_id"],
                                      time.monotonic()))
                await self.requests.put((message.topic.value, request))
            except server_proto.ProtoError as e:
                self.invalid.append((message.topic.value, e.reason))
            await self.control.on_message(message.topic.value, payload)
