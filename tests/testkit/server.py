"""The config of a test node: the server on loopback ephemeral ports, with
the scripted OpenAI-compatible model (testkit/fake_llm.py) as its LLM.
testkit/node.py starts it; the fixtures are in testkit/fixtures.py."""
from xiaozhi_server import config as configmod


def server_config(llm_url=None, **sections):
    # The start-up check, so a test's typo fails it instead of testing the default.
    configmod.refuse_unknown(sections, "server_config")
    cfg = configmod.merge(configmod.DEFAULTS, sections)
    cfg["server"].update(host="127.0.0.1", ws_port=0, http_port=0)
    cfg["llm"] = ({"type": "openai", "base_url": llm_url, "api_key": "test", "model": "fake-model"}
                  if llm_url else {"type": "none"})
    return cfg

