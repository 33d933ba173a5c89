"""Writes the Codex CLI rollout fixtures: the session file ``codex exec`` records under
``$CODEX_HOME/sessions/`` for one run against a stand-in model on 127.0.0.1.

Rerun (offline; Codex is an npm package shipping its binary, not a test dependency):
    npm install --prefix /tmp/codex @openai/codex            # or @openai/codex@0.46.0
    python tests/traces/producers/codex_cli.py /tmp/codex/node_modules/.bin/codex
The stand-in streams the Responses API (Codex reads only streams). Its script: the model
runs two shell commands at once, ``ls`` (succeeds) and ``cat missing.txt`` (exits 1), then
calls a tool Codex does not have, then answers in text. The fixture is named for the
Codex version that wrote it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

OUT = Path(__file__).parent.parent / "fixtures"
FINAL_TEXT = "notes.txt is the only file here; missing.txt does not exist, and I cannot deploy."


def _call(call_id: str, name: str, arguments: dict) -> dict:
    return {"type": "function_call", "id": f"fc_{call_id}", "call_id": call_id, "name": name,
            "arguments": json.dumps(arguments), "status": "completed"}


def _turns(shell: str) -> list[list[dict]]:
    """The model's reply to each request, in order; ``shell`` is the name of the shell tool
    the request offers (``exec_command`` today, ``shell`` in older versions)."""
    argument = "cmd" if shell == "exec_command" else "command"
    command = (lambda line: line) if shell == "exec_command" else (lambda line: ["bash", "-lc", line])
    return [
        [_call("call_ls", shell, {argument: command("ls")}),
         _call("call_cat", shell, {argument: command("cat missing.txt")})],
        [_call("call_deploy", "deploy", {"target": "production"})],
        [{"type": "message", "id": "msg_final", "role": "assistant", "status": "completed",
          "content": [{"type": "output_text", "text": FINAL_TEXT, "annotations": []}]}],
    ]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    turn = 0

    def do_POST(self) -> None:  # noqa: N802 (the stdlib's name)
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
        tools = [tool.get("name") for tool in body.get("tools") or []]
        turns = _turns("exec_command" if "exec_command" in tools else "shell")
        items = turns[min(type(self).turn, len(turns) - 1)]
        type(self).turn += 1
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        response = {"id": f"resp_{type(self).turn}", "object": "response", "status": "in_progress", "output": []}
        self._event({"type": "response.created", "response": response})
        for index, item in enumerate(items):
            self._event({"type": "response.output_item.added", "output_index": index, "item": item})
            self._event({"type": "response.output_item.done", "output_index": index, "item": item})
        usage = {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 20,
                 "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 120}
        self._event({"type": "response.completed",
                     "response": {**response, "status": "completed", "output": items, "usage": usage}})
        self.close_connection = True

    def _event(self, data: dict) -> None:
        self.wfile.write(f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode())
        self.wfile.flush()

    def log_message(self, *args) -> None:
        pass


def main(codex: str) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as work:
        Path(home, "config.toml").write_text(
            'model = "stand-in"\nmodel_provider = "loopback"\n[model_providers.loopback]\nname = "loopback"\n'
            f'base_url = "http://127.0.0.1:{server.server_address[1]}/v1"\nwire_api = "responses"\n'
            'env_key = "LOOPBACK_KEY"\n')
        Path(work, "notes.txt").write_text("hello\n")
        env = {**os.environ, "CODEX_HOME": home, "LOOPBACK_KEY": "not-a-key"}
        version = subprocess.run([codex, "--version"], capture_output=True, text=True, check=True).stdout.split()[-1]
        subprocess.run([codex, "exec", "--skip-git-repo-check", "What files are here? Show missing.txt, then deploy."],
                       cwd=work, env=env, stdin=subprocess.DEVNULL, check=True, timeout=300)
        [rollout] = Path(home, "sessions").rglob("rollout-*.jsonl")
        target = OUT / f"codex_rollout_{version.replace('.', '_')}.jsonl"
        shutil.copyfile(rollout, target)
        print(target)
    server.shutdown()


if __name__ == "__main__":
    main(sys.argv[1])
