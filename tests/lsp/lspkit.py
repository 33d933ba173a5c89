"""A synchronous LSP client for the tests: pygls's LanguageClient driving a real `admiss lsp`
subprocess over stdio, its event loop on a thread of its own."""

from __future__ import annotations

import asyncio
import sys
import threading
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

ADMISS = str(Path(sys.executable).parent / "admiss")
TIMEOUT = 60


class Session:
    """One server process; ``open``/``change`` then wait for the diagnostics of that version."""

    def __init__(self, cwd: Path | None = None, capabilities: lsp.ClientCapabilities | None = None):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.client = LanguageClient("admiss-tests", "0")
        self.published: dict[tuple[str, int | None], list[lsp.Diagnostic]] = {}
        self.arrived = threading.Condition()
        self.versions: dict[str, int] = {}

        @self.client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def _diagnostics(params: lsp.PublishDiagnosticsParams) -> None:
            with self.arrived:
                self.published[(params.uri, params.version)] = list(params.diagnostics)
                self.arrived.notify_all()

        self.run(self.client.start_io(ADMISS, "lsp", cwd=str(cwd) if cwd else None))
        self.initialized = self.run(self.client.initialize_async(lsp.InitializeParams(
            capabilities=capabilities or lsp.ClientCapabilities(), process_id=None, root_uri=None)))
        self.client.initialized(lsp.InitializedParams())

    def run(self, coroutine) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(TIMEOUT)

    def call(self, method: str, params: Any) -> Any:
        """A request by its lsprotocol method name, e.g. lsp.TEXT_DOCUMENT_HOVER."""
        async def request() -> Any:
            return await self.client.protocol.send_request_async(method, params)
        return self.run(request())

    @property
    def alive(self) -> bool:
        return self.client._server is not None and self.client._server.returncode is None

    def open(self, uri: str, text: str) -> list[lsp.Diagnostic]:
        self.versions[uri] = 1
        self.client.text_document_did_open(lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri=uri, language_id="rubric", version=1, text=text)))
        return self.diagnostics(uri, 1)

    def change(self, uri: str, text: str, wait: bool = True) -> list[lsp.Diagnostic] | None:
        version = self.versions[uri] = self.versions[uri] + 1
        self.client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
            [lsp.TextDocumentContentChangeWholeDocument(text=text)]))
        return self.diagnostics(uri, version) if wait else None

    def diagnostics(self, uri: str, version: int) -> list[lsp.Diagnostic]:
        with self.arrived:
            if not self.arrived.wait_for(lambda: (uri, version) in self.published, TIMEOUT):
                raise AssertionError(f"no diagnostics for {uri} version {version} (server alive: {self.alive})")
            return self.published[(uri, version)]

    def close(self) -> None:
        try:
            self.run(self.client.shutdown_async(None))
            self.client.exit(None)
            self.run(asyncio.wait_for(self.client._server.wait(), TIMEOUT))
        finally:
            self.run(self.client.stop())
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(TIMEOUT)


def position(text: str, needle: str, occurrence: int = 0, inside: int = 0) -> lsp.Position:
    """Where the ``occurrence``-th ``needle`` of ``text`` starts, ``inside`` characters in."""
    offset = -1
    for _ in range(occurrence + 1):
        offset = text.index(needle, offset + 1)
    offset += inside
    line = text.count("\n", 0, offset)
    return lsp.Position(line, offset - (text.rfind("\n", 0, offset) + 1))


def doc(uri: str) -> lsp.TextDocumentIdentifier:
    return lsp.TextDocumentIdentifier(uri=uri)
