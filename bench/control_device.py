"""The board's MQTT side in a process of its own, for the control flood bench:
the firmware's own client (firmware/lib/mqtt.py) and request handling
(firmware/app/control/control.py) on CPython, logged in with the device's
credentials. Each request costs `work_ms` of the board's time, one at a
time (the gateway hands one task at a time to the server).

    python bench/control_device.py PORT DEVICE_ID USER PASSWORD WORK_MS inline|spawn

inline: the board's work is done before the PUBACK (the client reads
nothing meanwhile: the broker's queue for us fills), the ack sent after;
spawn: handled in a task of its own like app/control/remote.py does (PUBACK at
once: the board's tasks pile up).
It prints one JSON line of totals when stdin closes.
"""
import asyncio
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for p in ("firmware/lib", "firmware"):
    sys.path.insert(0, os.path.join(ROOT, p))

import log  # noqa: E402
import mqtt  # noqa: E402
import proto  # noqa: E402
from app.control import control  # noqa: E402


async def main(port, device_id, user, password, work_ms, mode):
    log.set_output(sys.stderr)   # stdout carries the JSON lines only
    log.set_level(log.WARN)
    totals = {"received": 0, "handled": 0, "most_pending": 0, "first_at": None, "last_at": None}
    pending = [0]
    lock = asyncio.Lock()
    client = None

    async def work():
        pending[0] += 1
        totals["most_pending"] = max(totals["most_pending"], pending[0])
        async with lock:
            await asyncio.sleep(work_ms / 1000)
        pending[0] -= 1
        totals["handled"] += 1
        totals["last_at"] = time.time()

    async def act(req):
        if mode == "spawn":
            await work()
        return proto.ACK_ACCEPTED, "started", "ok"

    async def publish(topic, data, qos=1):
        return await client.publish(topic, data, qos)

    ctl = control.Control(device_id, publish, {proto.ACTION_START_APP_TASK: act, proto.ACTION_SET_ALARM: act})

    def on_message(topic, payload):
        totals["received"] += 1
        totals["first_at"] = totals["first_at"] or time.time()
        data = bytes(payload)
        if mode == "spawn":
            asyncio.create_task(ctl.on_message(topic, data))
            return None

        async def inline():
            await work()
            # The ack waits for its own PUBACK, which only this reading task can see.
            asyncio.create_task(ctl.on_message(topic, data))
        return inline()

    client = mqtt.MQTTClient("127.0.0.1", port, "bench-" + device_id, on_message=on_message, keepalive=60,
                             user=user, password=password, max_packet=4096, send_buf=2048)
    for t in ctl.topics:
        client.subscribe(t, 1)
    asyncio.create_task(client.run())
    while not client.connected:
        await asyncio.sleep(0.01)
    print(json.dumps({"ready": True}), flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    await client.disconnect()
    print(json.dumps(totals), flush=True)


if __name__ == "__main__":
    a = sys.argv[1:]
    asyncio.run(main(int(a[0]), a[1], a[2], a[3], float(a[4]), a[5]))
