// Run a test plan's steps on a connected MCP client (1.x SDK or 2.x client:
// the same method names) and collect each step's outcome, for
// mcp_sdk_client.mjs and mcp_client2.mjs. A step is {"op": ...arguments};
// its outcome {"result": ...} or {"error": {"name", "code", "message"}}.
export async function runPlan(client, plan) {
  const steps = [];
  for (const step of plan) {
    try {
      let r;
      switch (step.op) {
        case "listTools": r = await client.listTools(); break;
        case "callTool": r = await client.callTool({ name: step.name, arguments: step.arguments }); break;
        case "listResources": r = await client.listResources(step.cursor ? { cursor: step.cursor } : undefined); break;
        case "listResourceTemplates": r = await client.listResourceTemplates(); break;
        case "readResource": r = await client.readResource({ uri: step.uri }); break;
        case "listPrompts": r = await client.listPrompts(); break;
        case "getPrompt": r = await client.getPrompt({ name: step.name, arguments: step.arguments }); break;
        case "complete": r = await client.complete({ ref: step.ref, argument: step.argument }); break;
        case "ping": r = await client.ping(); break;
        default: throw new Error(`unknown op ${step.op}`);
      }
      steps.push({ result: r });
    } catch (e) {
      steps.push({ error: { name: e.name, code: e.code ?? null, message: String(e.message) } });
    }
  }
  return steps;
}
