// Drive `trove mcp` with the official 2.x MCP client (npm
// @modelcontextprotocol/client) in one of its version negotiation modes and
// print what every step returned, as JSON, for tests/e2e/test_mcp_modern.py.
//
//   node mcp_client2.mjs CLIENT_DIR PLAN.json MODE stdio TROVE_BIN
//   node mcp_client2.mjs CLIENT_DIR PLAN.json MODE http URL
//
// CLIENT_DIR holds node_modules/@modelcontextprotocol/client
// (scripts/npm-install.sh). MODE: "pin" (2026-07-28 only: server/discover,
// no fallback), "auto" (probe, fall back to initialize) or "legacy"
// (initialize). PLAN.json: steps as in mcp_sdk_client.mjs. The client checks
// every result against the schemas of the negotiated version itself.
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { runPlan } from "./mcp_plan.mjs";

const [dir, planFile, mode, kind, target] = process.argv.slice(2);
const pkg = (p) =>
  import(pathToFileURL(`${dir}/node_modules/@modelcontextprotocol/client/dist/${p}`).href);
const { Client, StreamableHTTPClientTransport } = await pkg("index.mjs");
const plan = JSON.parse(readFileSync(planFile, "utf8"));

let transport;
if (kind === "stdio") {
  const { StdioClientTransport } = await pkg("stdio.mjs");
  transport = new StdioClientTransport({ command: target, args: ["mcp"], env: process.env,
                                         stderr: "inherit" });
} else {
  transport = new StreamableHTTPClientTransport(new URL(target));
}
const negotiation = mode === "pin" ? { mode: { pin: "2026-07-28" } } : { mode };
const client = new Client({ name: "trove-test-2x", version: "1.0.0" },
                          { versionNegotiation: negotiation });
const out = { steps: [] };
try {
  await client.connect(transport);
} catch (e) {
  out.connect_error = { name: e.name, code: e.code ?? null, message: String(e.message) };
  console.log(JSON.stringify(out));
  process.exit(0);
}
out.server = client.getServerVersion() ?? null;
out.capabilities = client.getServerCapabilities() ?? null;
out.instructions = client.getInstructions() ?? null;
out.protocol_version = client.getNegotiatedProtocolVersion() ?? null;

out.steps = await runPlan(client, plan);
await client.close();
console.log(JSON.stringify(out));
