"""The voice chain, inbound to reply: Opus, VAD, end of turn, ASR (listener), the chat LLM (dialogue), sentences, TTS, Opus, paced frames (speaker)."""
