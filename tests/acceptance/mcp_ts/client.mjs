// A stock MCP client: the official TypeScript SDK with its defaults (no _meta of the
// console's, the SDK's own 60 s request timeout). Run by tests/acceptance/test_mcp_ts.py:
//   node client.mjs URL TOKEN APPROVED_PATH DENIED_PATH CANCELLED_PATH
// It lists the tools, then calls write_file three times (a person approves the first,
// denies the second; the client itself cancels the third once it is told the call
// awaits a person) and prints what it saw as one JSON object.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, token, approvedPath, deniedPath, cancelledPath] = process.argv.slice(2);

function texts(result) {
  return (result.content || []).map((block) => block.text || "").join("\n");
}

function shown(result, progress) {
  return {
    isError: result.isError === true,
    text: texts(result),
    meta: result._meta || {},
    structured: result.structuredContent ?? null,
    progress,
  };
}

const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: "synthorg-acceptance-ts", version: "1.0.0" });
await client.connect(transport);
const report = {};

const listed = await client.listTools();
const writeFile = listed.tools.find((tool) => tool.name === "write_file");
report.writeFileAnnotations = writeFile ? writeFile.annotations : null;

const approvedNotes = [];
const approved = await client.callTool(
  { name: "write_file", arguments: { path: approvedPath, content: "from typescript\n" } },
  undefined,
  { onprogress: (note) => approvedNotes.push(note) },
);
report.approved = shown(approved, approvedNotes);

const denied = await client.callTool({
  name: "write_file",
  arguments: { path: deniedPath, content: "never\n" },
});
report.denied = shown(denied, []);

const abort = new AbortController();
const cancelNotes = [];
try {
  const cancelled = await client.callTool(
    { name: "write_file", arguments: { path: cancelledPath, content: "never\n" } },
    undefined,
    {
      signal: abort.signal,
      onprogress: (note) => {
        cancelNotes.push(note);
        // Told the call awaits a person: the user changes their mind.
        abort.abort("the user pressed stop");
      },
    },
  );
  report.cancelled = { answered: shown(cancelled, cancelNotes) };
} catch (error) {
  report.cancelled = { error: String(error), progress: cancelNotes };
}

await client.close();
process.stdout.write(JSON.stringify(report) + "\n");
