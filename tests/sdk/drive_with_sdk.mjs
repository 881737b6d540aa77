// The official Codex TypeScript SDK driving agentexec unchanged: the SDK spawns
// `agentexec exec --experimental-json ...`, writes the prompt to stdin, parses every JSONL
// line, and resumes the thread with `resume <id>` after its options.
import assert from "node:assert/strict";
import { Codex } from "@openai/codex-sdk";

const [bin, repo, port] = process.argv.slice(2);
const codex = new Codex({
  codexPathOverride: bin,
  baseUrl: `http://127.0.0.1:${port}/v1`,
  apiKey: "test-key",
});
const thread = codex.startThread({ workingDirectory: repo, sandboxMode: "workspace-write" });

const first = await thread.run("say hi");
assert.match(thread.id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
assert.equal(first.finalResponse, "All done.");
assert.deepEqual(
  first.items.map((i) => [i.type, i.status ?? null]),
  [["reasoning", null], ["command_execution", "completed"], ["reasoning", null],
   ["agent_message", null]],
);
assert.equal(first.items[2].text, "It worked");
const command = first.items[1];
assert.equal(command.command, "/bin/bash -lc 'echo hi from the sandbox'");
assert.equal(command.aggregated_output, "hi from the sandbox\n");
assert.equal(command.exit_code, 0);
assert.deepEqual(first.usage, {
  input_tokens: 220, cached_input_tokens: 30, cache_write_input_tokens: 0,
  output_tokens: 11, reasoning_output_tokens: 0,
});

// A second turn on the same thread: the SDK passes `resume <thread id>`.
// It replays the first turn's reasoning (with its encrypted content) and calls a tool again.
const { events } = await thread.runStreamed("again");
const seen = [];
for await (const e of events) seen.push(e.type === "item.completed" || e.type === "item.started"
  ? `${e.type}:${e.item.type}` : e.type);
assert.deepEqual(seen, [
  "thread.started", "turn.started", "item.completed:reasoning",
  "item.started:command_execution", "item.completed:command_execution",
  "item.completed:agent_message", "turn.completed",
]);
assert.equal(thread.id.length, 36);

// A failing turn surfaces as the SDK's error with our message.
const failing = codex.startThread({ workingDirectory: repo, sandboxMode: "read-only" });
await assert.rejects(failing.run("fail please"), /simulated outage/);
console.log("sdk-compat: 3 turns (reasoning, tools, resume) driven by @openai/codex-sdk, all assertions held");
