"""The chat LLM's system prompt for each task's system_prompt_mode.

agent: the companion's own prompt. agent_proactive: the same, plus taking
the lead. translator and none: the chat LLM is not used in those tasks
(translation goes to the translate MCP, which has its own prompt), so the
agent prompt stays for the moment the child switches back.
"""


def system_prompt(prompts, mode):
    base = prompts["agent"]
    if mode == "agent_proactive" and prompts.get("agent_proactive"):
        return base + " " + prompts["agent_proactive"]
    return base
