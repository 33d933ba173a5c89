// Starts `admiss lsp` (the command in the admiss.server.command setting) for .rubric files.
"use strict";
const vscode = require("vscode");
const { LanguageClient, TransportKind } = require("vscode-languageclient/node");

let client;

function activate(context) {
  const [command, ...args] = vscode.workspace.getConfiguration("admiss").get("server.command", ["admiss", "lsp"]);
  const server = { command, args, transport: TransportKind.stdio };
  client = new LanguageClient("admiss", "admiss rubrics", { run: server, debug: server }, {
    documentSelector: [{ scheme: "file", language: "rubric" }, { scheme: "untitled", language: "rubric" }],
  });
  context.subscriptions.push({ dispose: () => client && client.stop() });
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
