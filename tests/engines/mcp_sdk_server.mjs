// A real MCP server built with the official TypeScript SDK (@modelcontextprotocol/sdk): one
// tool, `add`, over streamable HTTP (default) or stdio (--stdio). With --token T the HTTP
// endpoint answers 401 to any request without `Authorization: Bearer T`. The HTTP port is
// written to --port-file once listening. tests/engines/run.sh installs the SDK and runs a copy
// of this file beside its node_modules.
import http from "node:http";
import fs from "node:fs";
import { randomUUID } from "node:crypto";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const argv = process.argv.slice(2);
const option = (name) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
};

function makeServer() {
  const server = new McpServer({ name: "agentexec-engine-test", version: "1.0.0" });
  server.registerTool(
    "add",
    { description: "Add two numbers.", inputSchema: { a: z.number(), b: z.number() } },
    async ({ a, b }) => ({ content: [{ type: "text", text: String(a + b) }] }),
  );
  return server;
}

if (argv.includes("--stdio")) {
  await makeServer().connect(new StdioServerTransport());
} else {
  const token = option("--token");
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    enableJsonResponse: argv.includes("--json-response"),
  });
  await makeServer().connect(transport);
  const httpServer = http.createServer(async (req, res) => {
    if (token && req.headers.authorization !== `Bearer ${token}`) {
      res.writeHead(401, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ error: "bad token" }));
      return;
    }
    let body = "";
    for await (const chunk of req) body += chunk;
    await transport.handleRequest(req, res, body ? JSON.parse(body) : undefined);
  });
  httpServer.listen(0, "127.0.0.1", () => {
    fs.writeFileSync(option("--port-file"), String(httpServer.address().port));
  });
}
