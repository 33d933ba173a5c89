"""Writes the OpenAI Responses traces that the rubric test files (rubrics/*.rubric.test.toml)
check: an agent loop driven by the official ``openai`` client's Responses API, against a
stand-in model on 127.0.0.1 that answers from a script, with the tools run here.

Each run: the model reasons and says what it will do (a reasoning item with a summary, a
message, and one or more function calls), the tools answer (some with an error), and the
model's last reply is the final answer. The trace is what the loop holds at the end: the
request's ``input`` items and the last response's ``output``, as the client returned them.

Regenerate (openai is in the test extra):
    python rubrics/traces/make_responses_traces.py
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable

import openai

HERE = Path(__file__).resolve().parent
MODEL = "gpt-5-mini"


def reasoning(text: str) -> dict:
    return {"type": "reasoning", "summary": [{"type": "summary_text", "text": text}]}


def message(text: str) -> dict:
    return {"type": "message", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def call(call_id: str, name: str, arguments: dict) -> dict:
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": json.dumps(arguments),
            "status": "completed"}


class StandIn:
    """Answers POST /v1/responses with the scripted outputs in order, one per request."""

    def __init__(self, outputs: list[list[dict]]):
        self.outputs = list(outputs)
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the stdlib's name)
                self.rfile.read(int(self.headers.get("content-length", 0)))
                items = outer.outputs.pop(0)
                count = len(outer.outputs)
                for i, item in enumerate(items):
                    item.setdefault("id", f"{item['type'][:2]}_{count}_{i}")
                body = json.dumps({"id": f"resp_{count}", "object": "response", "created_at": 1764547200,
                                   "status": "completed", "model": MODEL, "output": items, "parallel_tool_calls": True,
                                   "tool_choice": "auto", "tools": [],
                                   "usage": {"input_tokens": 50, "output_tokens": 10, "total_tokens": 60,
                                             "input_tokens_details": {"cached_tokens": 0},
                                             "output_tokens_details": {"reasoning_tokens": 4}}}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def run(prompt: str, outputs: list[list[dict]], tools: dict[str, Callable[[dict], str]], path: Path) -> None:
    """The agent loop: send, run every function call the reply makes, send again, until a
    reply makes none; then write the trace to ``path``."""
    stand_in = StandIn(outputs)
    client = openai.OpenAI(base_url=stand_in.url, api_key="not-a-key", max_retries=0)
    schemas = [{"type": "function", "name": name, "parameters": {"type": "object"}} for name in tools]
    items: list[dict] = [{"role": "user", "content": prompt}]
    try:
        while True:
            response = client.responses.create(model=MODEL, input=items, tools=schemas)
            calls = [item for item in response.output if item.type == "function_call"]
            if not calls:
                break
            for item in response.output:
                items.append(item.model_dump(exclude_none=True))
            for item in calls:
                items.append({"type": "function_call_output", "call_id": item.call_id,
                              "output": tools[item.name](json.loads(item.arguments))})
    finally:
        stand_in.close()
    trace = {"model": response.model, "input": items, "output": [i.model_dump(exclude_none=True) for i in response.output]}
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(trace, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _fetch_page(args: dict) -> str:
    if args["url"].endswith("/missing"):
        return "Error: 404 Not Found"
    return json.dumps({"url": args["url"], "text": "Solar PV additions reached 425 GW in 2023."})


def research() -> None:
    run("How much solar PV was added in 2023?", [
        [reasoning("Search first, then read the sources."), message("Let me look that up."),
         call("call_s1", "web_search", {"q": "solar PV additions 2023"})],
        [call("call_f1", "fetch_page", {"url": "https://www.iea.org/reports/renewables-2023"}),
         call("call_f2", "fetch_page", {"url": "https://example.org/missing"}),
         call("call_n1", "take_notes", {"note": "425 GW"})],
        [message('{"answer": "Solar PV additions reached 425 GW in 2023 [1].", "sources": ["IEA Renewables 2023"]}')],
    ], {"web_search": lambda a: json.dumps({"results": [{"title": "IEA Renewables 2023"}]}),
        "fetch_page": _fetch_page, "take_notes": lambda a: "noted"}, HERE / "research_citations" / "fetched_and_failed.json")


def filings() -> None:
    forms = {"0001": "10-K", "0002": "10-Q"}

    def fetch_filing(args: dict) -> str:
        if args["accession"] not in forms:
            return json.dumps({"error": "no such filing"})
        return json.dumps({"form": forms[args["accession"]], "operator": "Permian Basin Operating LLC"})

    run("Who operates the Permian assets?", [
        [reasoning("The operator is named in the periodic filings."), message("Fetching the filings."),
         call("call_k1", "fetch_filing", {"accession": "0001"}), call("call_q1", "fetch_filing", {"accession": "0002"}),
         call("call_x1", "fetch_filing", {"accession": "9999"}), call("call_c1", "company_search", {"name": "Permian"})],
        [message('{"operator": "Permian Basin Operating LLC", "source": "2025 10-K filing"}')],
    ], {"fetch_filing": fetch_filing, "company_search": lambda a: json.dumps({"cik": "0000123"})},
        HERE / "sec_filings_serve" / "ten_k_and_ten_q.json")


def support() -> None:
    def issue_refund(args: dict) -> str:
        if args["order"] == "B2":
            return "Error: card declined"
        return json.dumps({"order": args["order"], "status": "refunded"})

    run("Please refund orders A1 and B2.", [
        [reasoning("Look the orders up before refunding."), message("Checking your orders."),
         call("call_l1", "lookup_order", {"order": "A1"}), call("call_h1", "read_policy", {"topic": "refunds"})],
        [call("call_r1", "issue_refund", {"order": "A1", "amount": 20}),
         call("call_r2", "issue_refund", {"order": "B2", "amount": 5})],
        [message("Order A1 is refunded; the refund of B2 was declined.")],
    ], {"lookup_order": lambda a: json.dumps({"order": a["order"], "total": 20}),
        "read_policy": lambda a: "Refunds within 30 days.", "issue_refund": issue_refund},
        HERE / "support_agent_serve" / "one_refunded_one_declined.json")


def booking() -> None:
    run("Please cancel booking NR-48213 and refund me.", [
        [reasoning("Read the booking, then cancel and refund."), message("Looking at your booking."),
         call("call_lk1", "lookup_booking", {"booking_id": "NR-48213"}),
         call("call_pl1", "read_policy", {"topic": "cancellation"})],
        [call("call_cx1", "cancel_booking", {"booking_id": "NR-48213"}),
         call("call_rf1", "issue_refund", {"booking_id": "NR-48213", "amount_eur": 84.5})],
        [message("Booking NR-48213 is cancelled and 84.50 EUR is refunded.")],
    ], {"lookup_booking": lambda a: json.dumps({"booking_id": a["booking_id"], "status": "active"}),
        "read_policy": lambda a: "Free cancellation up to 24 hours before departure.",
        "cancel_booking": lambda a: json.dumps({"booking_id": a["booking_id"], "status": "cancelled"}),
        "issue_refund": lambda a: json.dumps({"booking_id": a["booking_id"], "status": "refunded"})},
        HERE / "booking_cancellation" / "looked_up_cancelled_refunded.responses.json")


if __name__ == "__main__":
    research()
    filings()
    support()
    booking()
