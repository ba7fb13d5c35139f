// The GGUF tests' independent readers of a file (scripts/llamacpp-data.sh
// installs them; run with NODE_PATH=<dir>/node_modules):
//
//   node gguf-peer.mjs dump FILE
//     @huggingface/gguf's parse: {version, data_offset, metadata: {key:
//     {type, value}}, tensors: [{name, ne, type, offset}]}, 64-bit integers
//     as decimal strings.
//   node gguf-peer.mjs greedy FILE IDS STEPS
//     llama.cpp (node-llama-cpp's prebuilt CPU build, 2 threads): the
//     prompt ids IDS (comma-separated), then STEPS greedy tokens:
//     {"tokens": [...]}.
import { createRequire } from "module";
import path from "path";

// Packages from NODE_PATH (an ES module's import does not read it).
const require = createRequire(path.join(process.env.NODE_PATH || ".", "x.js"));
const load = (name) => import(require.resolve(name));
const [, , command, file, ids, steps] = process.argv;
const plain = (v) =>
  typeof v === "bigint" ? v.toString()
  : Array.isArray(v) ? v.map(plain)
  : v;

if (command === "dump") {
  const { gguf } = await load("@huggingface/gguf");
  const parsed = await gguf(file, { allowLocalFile: true, typedMetadata: true });
  const metadata = {};
  for (const [key, entry] of Object.entries(parsed.typedMetadata)) {
    if (["version", "tensor_count", "kv_count"].includes(key)) continue;
    metadata[key] = { type: entry.type, value: plain(entry.value),
                      element: entry.subType };
  }
  console.log(JSON.stringify({
    version: parsed.metadata.version,
    data_offset: plain(parsed.tensorDataOffset),
    metadata,
    tensors: parsed.tensorInfos.map((t) => ({
      name: t.name, ne: plain(t.shape), type: t.dtype, offset: plain(t.offset) })),
  }));
} else if (command === "greedy") {
  const { getLlama } = await load("node-llama-cpp");
  const llama = await getLlama({ gpu: false, build: "never", maxThreads: 2,
                                 logLevel: "error" });
  const model = await llama.loadModel({ modelPath: file });
  const context = await model.createContext({ contextSize: 256, threads: 2 });
  const sequence = context.getSequence();
  const prompt = ids.split(",").map(Number);
  await sequence.evaluateWithoutGeneratingNewTokens(prompt.slice(0, -1));
  const tokens = [];
  for await (const token of sequence.evaluate([prompt[prompt.length - 1]],
                                              { temperature: 0, yieldEogToken: true })) {
    tokens.push(token);
    if (tokens.length >= Number(steps)) break;
  }
  console.log(JSON.stringify({ tokens }));
  await context.dispose();
  await model.dispose();
} else {
  console.error("usage: gguf-peer.mjs dump FILE | greedy FILE IDS STEPS");
  process.exit(2);
}
