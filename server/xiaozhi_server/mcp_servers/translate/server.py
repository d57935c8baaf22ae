"""The translate MCP server (stdio): one tool, `translate`.

Run: python -m xiaozhi_server.mcp_servers.translate.server

translate(text, source_lang?, target_lang?) returns only the translation:
Chinese → English, English → Chinese, any other language → Chinese (see
languages.py for detection and prompt.py for the rules the model gets).
Empty text, text over TRANSLATE_MAX_CHARS characters (default 500) and a
missing or failing model come back as an error result the caller can
speak, never as a crash of this process.
"""
import os
from typing import Annotated

from mcp_types import CallToolResult, TextContent
from pydantic import Field

from mcp.server.mcpserver import MCPServer

from . import languages, prompt
from .llm import TranslateError, TranslatorLlm

MAX_CHARS = int(os.environ.get("TRANSLATE_MAX_CHARS") or 500)

server = MCPServer(
    name="translate",
    instructions="Translates a child's words: Chinese to English, English and other languages to Chinese.",
    # Its stderr ends up in the xiaozhi server's log: keep it to problems.
    log_level="WARNING",
)
_llm = TranslatorLlm()


def check_text(text):
    """The text to translate, or TranslateError when it is empty or too long."""
    stripped = (text or "").strip()
    if not stripped:
        raise TranslateError("nothing to translate: the text is empty")
    if len(stripped) > MAX_CHARS:
        raise TranslateError("the text is too long to translate: %d characters, the limit is %d"
                             % (len(stripped), MAX_CHARS))
    return stripped


async def translate_text(text, source_lang="", target_lang="", llm=_llm):
    """The translation alone; TranslateError says in plain words why not."""
    text = check_text(text)
    source, target = languages.direction(text, source_lang, target_lang)
    if source == target:
        raise TranslateError("the text is already in %s" % languages.name_of(target))
    result = prompt.clean_reply(await llm.complete(prompt.messages(text, source, target)), text)
    if not result:
        raise TranslateError("the language model returned no translation")
    return result


def _text_result(text, is_error):
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=is_error)


@server.tool(
    name="translate",
    description=("Translate text. Chinese becomes English; English and every other language "
                 "become Chinese, unless target_lang says otherwise. Returns only the translation."),
)
async def translate(
    text: Annotated[str, Field(description="The words to translate, as they were said.")],
    source_lang: Annotated[str, Field(description="Language of the text (zh, en, ...); "
                                                  "detected when empty.")] = "",
    target_lang: Annotated[str, Field(description="Language to translate into; zh→en, "
                                                  "otherwise →zh when empty.")] = "",
) -> CallToolResult:
    # A result built here, rather than a raised ToolError, keeps the error
    # text free of SDK prefixes: the device may speak it as it is.
    try:
        return _text_result(await translate_text(text, source_lang, target_lang), False)
    except TranslateError as exc:
        return _text_result(str(exc), True)


def main():
    server.run("stdio")


if __name__ == "__main__":
    main()
