// An OpenAI client against attn-serve: the `openai` npm package (installed by
// scripts/tokenizer-data.sh into DATA) as applications use it, streaming
// chat included. Prints what it received as JSON for attn_serve_test.py.
//
//   node openai_client.mjs DATA BASE_URL
import path from "path";
import { createRequire } from "module";

const [data, baseURL] = process.argv.slice(2);
const require = createRequire(path.resolve(data, "node_modules") + "/");
const { OpenAI } = require("openai");
const client = new OpenAI({ baseURL: baseURL + "/v1", apiKey: "unused", maxRetries: 0 });

const messages = [
  { role: "system", content: "Be brief." },
  { role: "user", content: "Hi!" },
];
const stream = await client.chat.completions.create({
  model: "model", messages, max_tokens: 6, temperature: 0, stream: true,
});
let streamed = "";
let finish = null;
for await (const chunk of stream) {
  streamed += chunk.choices[0]?.delta?.content ?? "";
  finish = chunk.choices[0]?.finish_reason ?? finish;
}
const chat = await client.chat.completions.create({
  model: "model", messages, max_tokens: 6, temperature: 0,
});
const completion = await client.completions.create({
  model: "model", prompt: "Hello world", max_tokens: 12, temperature: 0,
});
const models = await client.models.list();
let refused = null;
try {
  await client.completions.create({ model: "model", prompt: "x", n: 3 });
} catch (error) {
  refused = { status: error.status, message: error.message };
}
console.log(JSON.stringify({
  chat_stream: streamed, chat_stream_finish: finish,
  chat: chat.choices[0].message.content,
  completion: completion.choices[0].text,
  models: models.data.map((m) => m.id),
  refused,
}));
