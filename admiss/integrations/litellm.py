"""A LiteLLM proxy guardrail that runs a rubric's chain gates on each model response.

In ``post_call`` mode the proxy hands the guardrail the request and its model's response:
the response's message is gated by one rung of a CHAIN (:meth:`admiss.Router.gate`), with
the request's ``messages`` as the evidence of its admissibility gates, exactly as
``admiss serve`` gates a rung's output. A response whose gates fail is blocked with an
error naming each failed gate and its line; every response gets a receipt in the
gateway's receipt store before it is answered, and a store that cannot be written blocks
the response. A gate that abstains counts as its ``ON ABSTAIN`` says: ``fail_closed``
blocks (the error says the gate abstained, and why), ``fail_open`` serves and names the
gate in the ``x-admiss-abstained`` header. A streamed response is held until its whole
text is gated, so no chunk of an output that failed is sent. Chat completions are gated;
another endpoint's text (a text completion) is blocked, and responses without generated
text (embeddings, images) pass untouched.

The only module that imports LiteLLM (and FastAPI, whose HTTPException is how a LiteLLM
guardrail blocks). docs/integrations/litellm.md has a worked config.
"""

from __future__ import annotations

import json
import logging
from typing import Any, AsyncGenerator, Mapping

from fastapi import HTTPException
from litellm import ModelResponse
from litellm.integrations.custom_guardrail import CustomGuardrail
from litellm.types.guardrails import GuardrailEventHooks

from admiss.cascade import SKIPPED
from admiss.gates.base import ABSTAIN, FAIL
from admiss.receipts import StoreError
from admiss.serve.calls import RequestError
from admiss.serve.router import Router, Served, store_writer

RECEIPT_HEADER = "x-admiss-receipt-id"
ABSTAINED_HEADER = "x-admiss-abstained"
# LiteLLM counts 422 as a guardrail's deliberate block (its llm_as_a_judge uses it too).
BLOCKED, BAD_REQUEST, NO_RECEIPT = 422, 400, 503


class AdmissGuardrail(CustomGuardrail):
    """``guardrail: admiss.integrations.litellm.AdmissGuardrail`` in a proxy config.

    ``rubric``: the ``.rubric`` (or IR) file; ``chain`` and ``rung``: which gates, needed
    when the rubric has several chains or the chain several rungs; ``admiss_config``: an
    admiss.toml (providers of judge gates, ``[serve] store``); ``receipts``: the receipt
    store (default: ``[serve] store``). Relative paths are from the proxy's working folder.
    """

    def __init__(self, rubric: str | None = None, admiss_config: str | None = None, chain: str | None = None,
                 rung: str | None = None, receipts: str | None = None, **kwargs: Any):
        if not rubric:
            raise ValueError("admiss guardrail: set litellm_params.rubric to a .rubric file")
        router = Router(rubric, admiss_config, chain, calls_rungs=False)
        self.rung = router.gating_rung(rung).name
        router.attach_store(store_writer(receipts or router.config.serve.store))
        self.router = router
        super().__init__(supported_event_hooks=[GuardrailEventHooks.post_call], **kwargs)
        if not self.default_on:
            # Then a request that does not name the guardrail is not gated: the client chooses.
            logging.getLogger(__name__).warning(
                "admiss guardrail %r: default_on is false, so only requests that name it are gated", self.guardrail_name)

    async def async_post_call_success_hook(self, data: dict, user_api_key_dict: Any, response: Any) -> Any:
        """The response when its gates pass (with the receipt id in a header); else an
        HTTPException that blocks it."""
        choices = getattr(response, "choices", None)
        if choices is None:  # an embedding, an image, a transcription: no generated text to gate
            return response
        if not isinstance(response, ModelResponse):
            raise _blocked(BAD_REQUEST, "admiss gates chat completions; this endpoint's responses carry text it "
                                        "does not gate (use /v1/chat/completions)")
        if len(choices) != 1:
            raise _blocked(BAD_REQUEST, f"admiss gates one output per request; the response has {len(choices)} "
                                        "choices (send n = 1)", "n")
        message = getattr(choices[0], "message", None)
        served = await self._gate(data, getattr(message, "content", None), _tool_calls(message), _maker(response))
        _set_headers(response, served)
        return response

    async def async_post_call_streaming_iterator_hook(self, user_api_key_dict: Any, response: Any,
                                                      request_data: dict) -> AsyncGenerator[Any, None]:
        """The stream's chunks, held until the whole text is gated: sent only when it passed."""
        if not self.should_run_guardrail(data=request_data, event_type=GuardrailEventHooks.post_call):
            async for chunk in response:
                yield chunk
            return
        maker = _maker(response)  # the stream wrapper knows the deployment's model
        chunks = [chunk async for chunk in response]
        text, model = _streamed(chunks)
        if text is None:
            raise _blocked(BAD_REQUEST, "admiss gates text outputs: this stream carries tool calls or several "
                                        "choices, which the guardrail does not assemble (send stream = false)",
                           "stream")
        await self._gate(request_data, text, (), maker or model)
        for chunk in chunks:
            yield chunk

    async def _gate(self, data: Mapping[str, Any], output: str | None, tool_calls: tuple[dict, ...],
                    model: str | None) -> Served:
        try:
            served = await self.router.gate(data.get("messages"), output, rung=self.rung, model=model,
                                            tool_calls=tool_calls)
        except RequestError as exc:
            raise _blocked(BAD_REQUEST, f"admiss cannot read the request: {exc}", exc.param) from None
        except StoreError as exc:
            raise _blocked(NO_RECEIPT, f"the receipt could not be stored, so nothing is served: {exc}",
                           code="receipt_store_failed") from None
        if served.rung is None:
            raise _blocked(BLOCKED, self._failure(served.receipt), code="admiss_gate_failed",
                           receipt_id=served.receipt["id"])
        return served

    def _failure(self, receipt: dict[str, Any]) -> str:
        """What blocked the response: each failed gate with its line, its verdict and why."""
        gates = self.router.gating_rung(self.rung).gates
        records = receipt["chain"]["rungs"][0]["gates"]
        failed = [_failed_gate(record, gate.where, gate.ir.on_abstain)
                  for record, gate in zip(records, gates) if record["effective"] == FAIL]
        return (f"admiss blocked the response: chain '{receipt['chain']['name']}' rung '{self.rung}' failed "
                f"({'; '.join(failed)}) (receipt {receipt['id']})")


def _failed_gate(record: dict[str, Any], where: str, on_abstain: str) -> str:
    if record["verdict"] == ABSTAIN:
        verdict = f"abstained, and ON ABSTAIN {on_abstain} counts that as a fail"
        if record.get("fault") == "candidate":
            verdict = "abstained on the output's own content, which always counts as a fail"
    elif record["verdict"] == SKIPPED:
        verdict = "is disabled by its error budget and counts as a fail"
    else:
        verdict = "failed"
    reason = f": {record['reason']}" if record.get("reason") else ""
    return f"gate {record['gate']} at {where} {verdict}{reason}"


def _blocked(status: int, message: str, param: str | None = None, code: str | None = None,
             receipt_id: str | None = None) -> HTTPException:
    error: dict[str, Any] = {"message": message, "type": "admiss_error", "param": param, "code": code}
    if receipt_id is not None:
        error["receipt_id"] = receipt_id
    return HTTPException(status_code=status, detail={"error": error},
                         headers={RECEIPT_HEADER: receipt_id} if receipt_id else None)


def _maker(response: Any) -> str | None:
    """The model that made the response, as the proxy's config names its deployment; only
    without that, the model the upstream's reply claims (which a judge's maker = checker
    test must not take on the upstream's word)."""
    hidden = getattr(response, "_hidden_params", None)
    configured = hidden.get("litellm_model_name") if isinstance(hidden, dict) else None
    return configured if isinstance(configured, str) and configured else getattr(response, "model", None)


def _tool_calls(message: Any) -> tuple[dict, ...]:
    """The message's tool calls in OpenAI's shape (what the tool_calls gates read)."""
    calls = getattr(message, "tool_calls", None) or []
    # An upstream may leave out an id or send arguments as an object: the gates read text.
    return tuple({"id": _as_text(call.id), "type": "function",
                  "function": {"name": _as_text(call.function.name), "arguments": _as_text(call.function.arguments)}}
                 for call in calls)


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else json.dumps(value, default=str)


def _streamed(chunks: list[Any]) -> tuple[str | None, str | None]:
    """A stream's text and model, or (None, _) when it holds tool calls or several choices."""
    parts, model = [], None
    for chunk in chunks:
        model = getattr(chunk, "model", None) or model
        for choice in getattr(chunk, "choices", None) or []:
            delta = getattr(choice, "delta", None)
            if getattr(choice, "index", 0) != 0 or getattr(delta, "tool_calls", None):
                return None, model
            parts.append(getattr(delta, "content", None) or "")
    return "".join(parts), model


def _set_headers(response: Any, served: Served) -> None:
    """The receipt id, and the gates that abstained and were let through, as response headers
    (LiteLLM sends a response's ``additional_headers``)."""
    hidden = getattr(response, "_hidden_params", None)
    if not isinstance(hidden, dict):
        return
    headers = hidden.setdefault("additional_headers", {})
    headers[RECEIPT_HEADER] = served.receipt["id"]
    gates = served.receipt["chain"]["rungs"][0]["gates"]
    abstained = [g["gate"] for g in gates if g["verdict"] == ABSTAIN]
    if abstained:
        headers[ABSTAINED_HEADER] = ", ".join(abstained)
