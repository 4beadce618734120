"""The OpenAI request bodies the server takes: every field honoured, or refused by name.

Bodies are validated with ``extra="forbid"``: a field this server does not know is a 400
naming it, never silently ignored. Fields known but not served (tools, images, audio,
structured output, ``suffix``, ``best_of`` other than ``n``, ``echo`` with ``logprobs``)
are refused with a 400 naming them too. Defaults are OpenAI's (and vLLM's): completions
``max_tokens`` 16, chat up to the context left, ``temperature`` 1, ``top_p`` 1, ``n`` 1.
Extensions as vLLM names them: ``top_k``, ``min_p``, ``repetition_penalty``,
``min_tokens``, ``stop_token_ids``, ``ignore_eos``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from hpn.serve.sampling import MAX_LOGPROBS, SamplingParams

MAX_N = 16
MAX_STOPS = 16
MAX_STOP_CHARS = 256


class Refused(ValueError):
    """A field this server knows and does not serve: (param, message)."""

    def __init__(self, param: str, message: str):
        super().__init__(message)
        self.param = param


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StreamOptions(_Body):
    include_usage: bool = False
    continuous_usage_stats: bool = False  # vLLM: usage in every chunk


class _Common(_Body):
    model: str
    n: int = Field(1, ge=1, le=MAX_N)
    best_of: int | None = Field(None, ge=1, le=MAX_N)
    temperature: float | None = Field(None, ge=0.0, le=2.0)
    top_p: float | None = Field(None, gt=0.0, le=1.0)
    top_k: int | None = Field(None, ge=-1)
    min_p: float = Field(0.0, ge=0.0, le=1.0)
    presence_penalty: float | None = Field(None, ge=-2.0, le=2.0)
    frequency_penalty: float | None = Field(None, ge=-2.0, le=2.0)
    repetition_penalty: float | None = Field(None, gt=0.0, le=10.0)
    logit_bias: dict[str, float] | None = None
    seed: int | None = Field(None, ge=-(2**63), le=2**63 - 1)
    stop: str | list[str] | None = None
    stop_token_ids: list[int] | None = Field(None, max_length=MAX_STOPS)
    stream: bool = False
    stream_options: StreamOptions | None = None
    user: str | None = Field(None, max_length=256)  # an end-user id: recorded nowhere
    ignore_eos: bool = False
    min_tokens: int = Field(0, ge=0)

    def stops(self) -> list[str]:
        s = [self.stop] if isinstance(self.stop, str) else list(self.stop or [])
        if len(s) > MAX_STOPS:
            raise Refused("stop", f"stop: at most {MAX_STOPS} strings, got {len(s)}")
        for x in s:
            if not x or len(x) > MAX_STOP_CHARS:
                raise Refused("stop", f"stop: strings of 1..{MAX_STOP_CHARS} characters")
        return s

    def check(self, vocab: int) -> None:
        """Refusals that need the whole body (and the model's vocabulary)."""
        if self.best_of is not None and self.best_of != self.n:
            raise Refused("best_of", "best_of: only equal to n is served (as vLLM v1)")
        if self.stream_options is not None and not self.stream:
            raise Refused("stream_options", "stream_options: only allowed with stream: true")
        for k, v in (self.logit_bias or {}).items():
            if not k.lstrip("-").isdigit() or not 0 <= int(k) < vocab:
                raise Refused("logit_bias", f"logit_bias: keys are token ids 0..{vocab - 1}")
            if not -100 <= v <= 100:
                raise Refused("logit_bias", "logit_bias: values are -100..100")
        for t in self.stop_token_ids or []:
            if not 0 <= t < vocab:
                raise Refused("stop_token_ids", f"stop_token_ids: token ids 0..{vocab - 1}")
        self.stops()

    def sampling(self, logprobs: int | None, child: int = 0) -> SamplingParams:
        """Sampling of choice `child` (vLLM's parallel sampling: seed + child)."""
        top_k = self.top_k or 0
        return SamplingParams(
            temperature=1.0 if self.temperature is None else self.temperature,
            top_p=1.0 if self.top_p is None else self.top_p,
            top_k=0 if top_k < 0 else top_k,
            min_p=self.min_p,
            presence_penalty=self.presence_penalty or 0.0,
            frequency_penalty=self.frequency_penalty or 0.0,
            repetition_penalty=self.repetition_penalty or 1.0,
            logit_bias={int(k): v for k, v in (self.logit_bias or {}).items()},
            seed=None if self.seed is None else self.seed + child,
            logprobs=logprobs,
            min_tokens=self.min_tokens,
        )

    @property
    def include_usage(self) -> bool:
        return self.stream_options is not None and self.stream_options.include_usage


class CompletionBody(_Common):
    prompt: str | list[str] | list[int] | list[list[int]]
    max_tokens: int | None = Field(16, ge=1)
    logprobs: int | None = Field(None, ge=0, le=MAX_LOGPROBS)
    echo: bool = False
    suffix: str | None = None

    def check(self, vocab: int) -> None:
        super().check(vocab)
        if self.suffix:
            raise Refused("suffix", "suffix: not supported (as in vLLM)")
        if self.echo and self.logprobs is not None:
            raise Refused("echo", "echo: not served with logprobs (prompt logprobs)")

    def logprobs_k(self) -> int | None:
        return self.logprobs

    def prompts(self) -> list[str | list[int]]:
        """The prompts of a (possibly list) body, each a string or token ids."""
        p = self.prompt
        if isinstance(p, str):
            return [p]
        if not p:
            raise Refused("prompt", "prompt: empty list")
        if all(isinstance(x, int) for x in p):
            return [list(p)]  # type: ignore[arg-type]
        return list(p)  # type: ignore[arg-type]


class TextPart(_Body):
    type: Literal["text"]
    text: str


class Message(_Body):
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[dict[str, Any]] | None = None
    name: str | None = Field(None, max_length=64)
    tool_calls: list[Any] | None = None
    tool_call_id: str | None = None


class ResponseFormat(_Body):
    type: str


class ChatBody(_Common):
    messages: list[Message] = Field(..., min_length=1, max_length=256)
    max_tokens: int | None = Field(None, ge=1)  # deprecated by OpenAI for the next one
    max_completion_tokens: int | None = Field(None, ge=1)
    logprobs: bool = False
    top_logprobs: int | None = Field(None, ge=0, le=MAX_LOGPROBS)
    response_format: ResponseFormat | None = None
    tools: list[Any] | None = None
    tool_choice: Any = None
    parallel_tool_calls: bool | None = None
    modalities: list[str] | None = None
    store: bool | None = None

    def check(self, vocab: int) -> None:
        super().check(vocab)
        if self.top_logprobs is not None and not self.logprobs:
            raise Refused("top_logprobs", "top_logprobs: needs logprobs: true")
        if self.response_format is not None and self.response_format.type != "text":
            raise Refused("response_format", "response_format: only {'type': 'text'} is served")
        if self.tools:
            raise Refused("tools", "tools: tool calling is not served")
        if self.tool_choice not in (None, "none"):
            raise Refused("tool_choice", "tool_choice: only 'none' (no tools are served)")
        if self.modalities not in (None, ["text"]):
            raise Refused("modalities", "modalities: only ['text']")
        if self.store:
            raise Refused("store", "store: completions are not stored")

    def logprobs_k(self) -> int | None:
        return (self.top_logprobs or 0) if self.logprobs else None

    @property
    def output_cap(self) -> int | None:
        """The client's output bound (max_completion_tokens wins, as in vLLM)."""
        return self.max_completion_tokens or self.max_tokens

    def chat(self) -> list[dict[str, str]]:
        """The messages as the chat template takes them: text content (parts joined),
        developer as system (the template's role markers: system, user, assistant)."""
        out = []
        for i, m in enumerate(self.messages):
            where = f"messages.{i}"
            if m.role == "tool" or m.tool_calls or m.tool_call_id:
                raise Refused(f"{where}.role", f"{where}.role: tool messages are not served")
            if m.content is None:
                raise Refused(f"{where}.content", f"{where}.content: required")
            if isinstance(m.content, str):
                text = m.content
            else:
                texts = []
                for j, part in enumerate(m.content):
                    if part.get("type") != "text":
                        raise Refused(
                            f"{where}.content.{j}.type",
                            f"{where}.content.{j}.type: only text parts are served, "
                            f"got {part.get('type')!r}",
                        )
                    try:
                        texts.append(TextPart.model_validate(part).text)
                    except ValueError:
                        raise Refused(
                            f"{where}.content.{j}", f"{where}.content.{j}: {{type, text}}"
                        ) from None
                text = "\n".join(texts)
            role = "system" if m.role == "developer" else m.role
            msg = {"role": role, "content": text}
            if m.name:
                msg["name"] = m.name
            out.append(msg)
        return out
