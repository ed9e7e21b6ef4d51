// Run the MCP conformance suite (@modelcontextprotocol/conformance 0.1.16)
// on Node.js 20: it imports fs.globSync, which Node has from version 22,
// and uses it only to gather `**/checks.json` result files for its summary.
// This preload (node --import THIS conformance/dist/index.js ...) rewrites
// that one import to a small globSync of the same shape ("**/NAME" under
// opts.cwd); nothing else of the suite is touched.
import { register } from "node:module";

const shim = `
import { readdirSync } from "node:fs";
import { join } from "node:path";
export function globSync(pattern, opts = {}) {
  const m = /^\\*\\*\\/([^*?\\[{/]+)$/.exec(pattern);
  if (!m) throw new Error("node20_globsync: unsupported pattern " + pattern);
  const root = opts.cwd ?? process.cwd(), out = [];
  const walk = (rel) => {
    for (const e of readdirSync(join(root, rel), { withFileTypes: true })) {
      const p = rel ? rel + "/" + e.name : e.name;
      if (e.isDirectory()) walk(p);
      else if (e.name === m[1]) out.push(p);
    }
  };
  walk("");
  return out;
}`;
const shimUrl = "data:text/javascript," + encodeURIComponent(shim);

const hooks = `
export async function load(url, context, next) {
  const r = await next(url, context);
  if (!url.endsWith("/@modelcontextprotocol/conformance/dist/index.js")) return r;
  let src = String(r.source);
  src = src.replace(/import\\{([^}]*)\\}from"fs";/, (all, names) => {
    const m = /(?:^|,)globSync as (\\w+)/.exec(names);
    if (!m) return all;
    const rest = names.split(",").filter((n) => !n.startsWith("globSync")).join(",");
    return 'import{globSync as ' + m[1] + '}from"${shimUrl}";import{' + rest + '}from"fs";';
  });
  return { ...r, source: src };
}`;
register("data:text/javascript," + encodeURIComponent(hooks));
