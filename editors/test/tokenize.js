// Tokenizes rubric files with the grammar beside this folder, by vscode-textmate (the engine
// VS Code runs) on vscode-oniguruma. Reads a JSON list of texts on stdin; writes, for each,
// its lines' tokens as [line, startColumn, endColumn, scopes] (columns in UTF-16 units).
"use strict";
const fs = require("fs");
const path = require("path");
const textmate = require("vscode-textmate");
const oniguruma = require("vscode-oniguruma");

const wasm = fs.readFileSync(path.join(path.dirname(require.resolve("vscode-oniguruma")), "onig.wasm"));
const onig = oniguruma.loadWASM(wasm.buffer).then(() => ({
  createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
  createOnigString: (text) => new oniguruma.OnigString(text),
}));
const grammarPath = path.join(__dirname, "..", "rubric.tmLanguage.json");
const registry = new textmate.Registry({
  onigLib: onig,
  loadGrammar: async () => textmate.parseRawGrammar(fs.readFileSync(grammarPath, "utf8"), grammarPath),
});

async function main() {
  const texts = JSON.parse(fs.readFileSync(0, "utf8"));
  const grammar = await registry.loadGrammar("source.rubric");
  const out = texts.map((text) => {
    let stack = textmate.INITIAL;
    const tokens = [];
    text.split("\n").forEach((line, number) => {
      const result = grammar.tokenizeLine(line, stack);
      for (const token of result.tokens) {
        tokens.push([number, token.startIndex, Math.min(token.endIndex, line.length), token.scopes]);
      }
      stack = result.ruleStack;
    });
    return tokens;
  });
  process.stdout.write(JSON.stringify(out));
}

main().catch((error) => { console.error(error); process.exit(1); });
