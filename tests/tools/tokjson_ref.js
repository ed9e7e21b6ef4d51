// Reference ids for tokjson parity tests: encode lines with the
// transformers.js tokenizer (npm @lenml/tokenizers) from a tokenizer.json.
//
//   node tokjson_ref.js LENML_TOKENIZERS_DIR TOKENIZER_JSON LINES_JSON OUT_JSON [CONFIG_JSON]
//
// LINES_JSON is a JSON array of strings; OUT_JSON receives one array of
// ids per line (no special tokens added) and, under "special", the ids of
// the first line with the post-processor's special tokens.
'use strict';
const fs = require('fs');
const path = require('path');
const [dir, tokPath, linesPath, outPath, cfgPath] = process.argv.slice(2);
const lib = require(path.join(dir, 'dist', 'main.js'));
const tokenizerJSON = JSON.parse(fs.readFileSync(tokPath, 'utf8'));
// transformers.js wants every top-level component present (null: none)
for (const k of ['normalizer', 'pre_tokenizer', 'post_processor', 'decoder'])
  if (tokenizerJSON[k] === undefined) tokenizerJSON[k] = null;
if (!tokenizerJSON.added_tokens) tokenizerJSON.added_tokens = [];
const tokenizerConfig = cfgPath ? JSON.parse(fs.readFileSync(cfgPath, 'utf8')) : {};
const tok = lib.TokenizerLoader.fromPreTrained({ tokenizerJSON, tokenizerConfig });
const lines = JSON.parse(fs.readFileSync(linesPath, 'utf8'));
const ids = lines.map((l) => Array.from(tok.encode(l, { add_special_tokens: false })));
const special = lines.length ? Array.from(tok.encode(lines[0], { add_special_tokens: true })) : [];
fs.writeFileSync(outPath, JSON.stringify({ ids, special }));
