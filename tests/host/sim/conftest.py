import pytest

from testkit.sim_process import SimProcess


@pytest.fixture
async def run_sim():
    """run_sim(state_dir, *args) -> a running SimProcess; killed at the end."""
    sims = []

    async def start(state_dir, *args):
        sim = await SimProcess.start(state_dir, *args)
        sims.append(sim)
        return sim

    yield start
    for s in sims:
        await s.close()
