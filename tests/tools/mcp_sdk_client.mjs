// Drive `trove mcp` with the official MCP TypeScript SDK client and print
// what every step returned, as JSON, for tests/e2e/test_mcp.py to check.
//
//   node mcp_sdk_client.mjs SDK_DIR PLAN.json stdio TROVE_BIN
//   node mcp_sdk_client.mjs SDK_DIR PLAN.json http URL [TOKEN]
//
// SDK_DIR holds node_modules/@modelcontextprotocol/sdk (scripts/npm-install.sh).
// PLAN.json is a list of steps: {"op": "listTools" | "callTool" | "listResources"
// | "listResourceTemplates" | "readResource" | "ping", ...arguments}. Each
// step's outcome is {"result": ...} or {"error": {"code", "message", "name"}};
// the SDK's own checks (structuredContent against the tool's outputSchema,
// protocol version negotiation) run as in any real client.
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { runPlan } from "./mcp_plan.mjs";

const [sdkDir, planFile, mode, target, token] = process.argv.slice(2);
const sdk = (p) =>
  import(pathToFileURL(`${sdkDir}/node_modules/@modelcontextprotocol/sdk/dist/esm/${p}`).href);
const { Client } = await sdk("client/index.js");
const plan = JSON.parse(readFileSync(planFile, "utf8"));

let transport;
if (mode === "stdio") {
  const { StdioClientTransport } = await sdk("client/stdio.js");
  // The server gets this process's environment (TROVE_INDEX, TROVE_CONFIG_DIR,
  // ASAN_OPTIONS): the SDK's default passes only a few variables.
  transport = new StdioClientTransport({ command: target, args: ["mcp"], env: process.env,
                                         stderr: "inherit" });
} else {
  const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  transport = new StreamableHTTPClientTransport(new URL(target), { requestInit: { headers } });
}

const client = new Client({ name: "trove-test", version: "1.0.0" });
const out = { steps: [] };
try {
  await client.connect(transport);
} catch (e) {
  out.connect_error = { name: e.name, code: e.code ?? null, message: String(e.message) };
  console.log(JSON.stringify(out));
  process.exit(0);
}
out.server = client.getServerVersion();
out.capabilities = client.getServerCapabilities();
out.instructions = client.getInstructions() ?? null;
out.protocol_version = transport.protocolVersion ?? null;
out.session_id = transport.sessionId ?? null;

out.steps = await runPlan(client, plan);
if (mode === "http") {
  try {
    await transport.terminateSession();   // DELETE /mcp
    out.terminated = true;
  } catch (e) {
    out.terminated = String(e.message);
  }
}
await client.close();
console.log(JSON.stringify(out));
