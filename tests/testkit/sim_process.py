"""tools/sim.py as a real subprocess, read as a user's tool would read it:
one JSON event per line on stdout (--json), each checked against the
console event schema (sim.event) as it arrives; a stdout line that is not
one lands in `bad_lines` and fails the next wait.

    sim = await SimProcess.start(state_dir, "--server", url)
    ev = await sim.wait_event("reply")
    await sim.send("say Hello")
    rc = await sim.wait_exit()
"""
import sys

from testkit.consoles import PipeConsole


class SimProcess(PipeConsole):
    @classmethod
    async def start(cls, state_dir, *args):
        return await super().start([sys.executable, "tools/sim.py", "--json", "--state", str(state_dir), *args],
                                   name="the simulator", events_only_stdout=True)

    @property
    def bad_lines(self):
        return self.log.bad
