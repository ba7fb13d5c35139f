#!/usr/bin/env python3
"""Chat templates rendered by Jinja2, as transformers renders them.

The independent reference of attnc's chat-template interpreter
(tokenizer/ChatTemplate.cpp): Jinja2 itself (Debian python3-jinja2),
in the environment transformers' apply_chat_template sets up: a sandboxed
environment with trim_blocks and lstrip_blocks, the loop-controls extension,
a tojson filter that is Python's json.dumps without ASCII escaping, and the
raise_exception and strftime_now globals. Prints JSON: one string per case,
or {"error": message} where rendering fails.

  chat_template_reference.py model TOKENIZER_CONFIG.json CONVERSATIONS.json
      the model's chat_template over each conversation ({"messages",
      "tools"?}), with add_generation_prompt and the config's special tokens
  chat_template_reference.py snippets SNIPPETS.json
      each {"template", "variables"}
"""

import json
import sys
from datetime import datetime

import jinja2
import jinja2.ext
import jinja2.sandbox


def environment():
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])

    def tojson(value, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent,
                          separators=separators, sort_keys=sort_keys)

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    return env


def render(env, template, variables):
    try:
        return env.from_string(template).render(**variables)
    except Exception as error:  # the case's expected outcome is the error
        return {"error": str(error)}


def token(config, key):
    value = config.get(key)
    if isinstance(value, dict):
        value = value.get("content")
    return value


def main():
    env = environment()
    mode = sys.argv[1]
    results = []
    if mode == "model":
        with open(sys.argv[2], encoding="utf-8") as f:
            config = json.load(f)
        with open(sys.argv[3], encoding="utf-8") as f:
            conversations = json.load(f)
        template = config["chat_template"]
        specials = {key: token(config, key) for key in
                    ("bos_token", "eos_token", "unk_token", "pad_token")
                    if token(config, key) is not None}
        for case in conversations:
            variables = dict(specials, messages=case["messages"], add_generation_prompt=True)
            if "tools" in case:
                variables["tools"] = case["tools"]
            results.append(render(env, template, variables))
    elif mode == "snippets":
        with open(sys.argv[2], encoding="utf-8") as f:
            for case in json.load(f):
                results.append(render(env, case["template"], case.get("variables", {})))
    else:
        raise SystemExit(__doc__)
    print("[\n" + ",\n".join(json.dumps(r, ensure_ascii=False) for r in results) + "\n]")


if __name__ == "__main__":
    main()
