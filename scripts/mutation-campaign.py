#!/usr/bin/env python3
"""A process-level mutation campaign against attnc and the plan loader.

The campaign #21 describes, repeatable: the project's own inputs mutated as a
hostile user would (bytes flipped, spans cut or repeated, numbers replaced by
extremes, values buried under deep nesting, keys stated twice), each run in a
fresh process, and every outcome counted:

  descriptions  attnc FILE --emit=header -o DIR (import, verify, the pass
                pipeline, the plan and the headers; no kernel compiled)
  plans         llama_tiny's generated plan with values edited, through
                build-fuzz's fuzz-plan (parse, load random weights, prefill,
                one decode step, under ASan + UBSan)

A crash is a signal, a sanitizer report or an uncaught exception; a clean
refusal is exit status 1 with a located "error:". "Silent" counts what was
accepted without a word although the mutation should have drawn one: a key
stated twice (an error in attnc's format, a warning in Hugging Face
configs), or a size field set to 2^40 or more. Crashing inputs are kept in
--keep. The same seed gives the same inputs, so two builds can be compared:

  scripts/mutation-campaign.py --attnc build/bin/attnc --descriptions 7300 \\
      --fuzz-plan build-fuzz/bin/fuzz-plan --plans 264
"""

import argparse
import collections
import concurrent.futures
import glob
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Fields whose value is a count or a size: 2^40 there must be refused.
SIZE_KEY = re.compile(
    r'"(num_\w+|\w*heads\w*|d_model|hidden_size|head_dim|vocab\w*|'
    r'intermediate_size|\w*max\w*|page_size|\w*layers\w*|n_\w+|\w*length\w*|'
    r'd_ff|\w*_dim)"\s*:\s*$')

EXTREMES = ['0', '-1', '1', '3', '2147483647', '2147483648', '1099511627776',
            '9007199254740993', '9223372036854775807', '18446744073709551616',
            '1e308', '-1e308', '1e-300', '0.5', 'NaN', 'true', 'null', '""',
            '"x"']
WORDS = ['"f16"', '"bf16"', '"int8"', '"f32"', '"paged"', '"contiguous"',
         '"causal"', '"none"', '"sliding_window"', '"silu"', '"gelu"', '""',
         '"' + 'a' * 300 + '"', '[]', '{}', '[1, 2]']
NUMBER = re.compile(r'-?\d+(\.\d+)?([eE][-+]?\d+)?')
STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
KEY_VALUE = re.compile(r'"[A-Za-z_][\w.]*"\s*:\s*(-?[\d.eE+-]+|"[^"]*"|true|'
                       r'false|null)')


def description_seeds():
    patterns = ['test/attnc/Inputs/**/*.json', 'test/attnc/Inputs/**/*.mlir',
                'test/kernels/descriptions/*.json', 'test/runtime/models/*.json',
                'test/runtime/models/*/config.json', 'examples/*/layer.json',
                'examples/*/config.json']
    files = sorted({f for p in patterns
                    for f in glob.glob(os.path.join(ROOT, p), recursive=True)})
    return [(os.path.relpath(f, ROOT), open(f, encoding='utf-8').read())
            for f in files]


class Mutation:
    """One mutated text and what the mutations should draw."""

    def __init__(self, text):
        self.text = text
        self.kinds = []
        self.duplicate_key = None  # the key stated twice
        self.huge_size = False


def mutate(text, rng, structural_only=False):
    m = Mutation(text)
    for _ in range(rng.choice([1, 1, 2, 3])):
        t = m.text
        kind = rng.choice(['number', 'number', 'word', 'nest', 'duplicate',
                           'delete', 'repeat', 'truncate', 'flip']
                          if not structural_only else
                          ['number', 'number', 'number', 'word', 'delete-op',
                           'duplicate', 'swap-string'])
        m.kinds.append(kind)
        if kind == 'number':
            spots = list(NUMBER.finditer(t))
            if not spots:
                continue
            s = rng.choice(spots)
            value = rng.choice(EXTREMES if not structural_only else
                               EXTREMES + ['2', '4', '6', '8', '16', '32', '64',
                                           '128', '256', '1024', '65536'])
            if (value in ('1099511627776', '9223372036854775807',
                          '18446744073709551616')
                    and SIZE_KEY.search(t[max(0, s.start() - 60):s.start()])):
                m.huge_size = True
            m.text = t[:s.start()] + value + t[s.end():]
        elif kind == 'word':
            spots = [s for s in STRING.finditer(t)
                     if t[s.end():s.end() + 3].lstrip().startswith((',', '}', ']'))]
            if not spots:
                continue
            s = rng.choice(spots)
            m.text = t[:s.start()] + rng.choice(WORDS) + t[s.end():]
        elif kind == 'swap-string':
            spots = [s for s in STRING.finditer(t)
                     if t[s.end():s.end() + 3].lstrip().startswith((',', '}', ']'))]
            if len(spots) < 2:
                continue
            a, b = rng.sample(spots, 2)
            m.text = t[:a.start()] + b.group() + t[a.end():]
        elif kind == 'nest':
            spots = [i for i, c in enumerate(t) if c == ':']
            if not spots:
                continue
            at = rng.choice(spots) + 1
            depth = rng.choice([10, 300, 10000, 100000])
            if rng.random() < 0.5:
                m.text = t[:at] + '[' * depth + '1' + ']' * depth + t[at:]
            else:
                m.text = (t[:at] + '{"a":' * depth + '1' + '}' * depth + t[at:])
        elif kind == 'duplicate':
            spots = list(KEY_VALUE.finditer(t))
            if not spots:
                continue
            s = rng.choice(spots)
            # Stated again right after itself, with another value where it
            # has one, so "last one wins" would change the model.
            m.text = t[:s.end()] + ', ' + s.group() + t[s.end():]
            m.duplicate_key = s.group().split(':')[0].strip()
        elif kind == 'delete-op':
            starts = [s.start() for s in re.finditer(r'\{\s*"', t)]
            if len(starts) < 2:
                continue
            begin = rng.choice(starts[1:])
            depth, end = 0, begin
            for end in range(begin, len(t)):
                depth += {'{': 1, '}': -1}.get(t[end], 0)
                if depth == 0:
                    break
            tail = end + 1
            while tail < len(t) and t[tail] in ' \n,':
                tail += 1
            m.text = t[:begin] + t[tail:]
        elif kind == 'delete' and len(t) > 2:
            a = rng.randrange(len(t))
            m.text = t[:a] + t[a + rng.randint(1, 40):]
        elif kind == 'repeat' and len(t) > 2:
            a = rng.randrange(len(t))
            b = min(len(t), a + rng.randint(1, 200))
            m.text = t[:b] + t[a:b] + t[b:]
        elif kind == 'truncate' and len(t) > 2:
            m.text = t[:rng.randrange(len(t))]
        elif kind == 'flip' and t:
            a = rng.randrange(len(t))
            m.text = t[:a] + chr(rng.randrange(32, 127)) + t[a + 1:]
    return m


def crashed(returncode, err):
    return (returncode < 0 or returncode >= 128 or
            any(s in err for s in ('Sanitizer', 'runtime error:',
                                   'terminate called', 'Assertion',
                                   'PLEASE submit a bug report',
                                   'deadly signal', 'Stack dump')))


def run_description(args, index, name, m, work):
    suffix = '.mlir' if name.endswith('.mlir') else '.json'
    base = os.path.basename(os.path.dirname(name)) if name.endswith(
        'config.json') else 'm'
    directory = os.path.join(work, str(index))
    os.makedirs(directory)
    path = os.path.join(directory,
                        'config.json' if name.endswith('config.json') else
                        base + suffix)
    with open(path, 'w', encoding='utf-8') as f:
        f.write(m.text)
    out = os.path.join(directory, 'out')
    try:
        p = subprocess.run([args.attnc, path, '--emit=header', '-o', out],
                           capture_output=True, timeout=args.timeout)
        err = p.stderr.decode(errors='replace')
        code = p.returncode
    except subprocess.TimeoutExpired:
        return 'timeout', path, ''
    if crashed(code, err):
        outcome = 'crash'
    elif code == 0:
        outcome = 'accepted'
        # Still stated twice after the later mutations, and not a word.
        if (m.duplicate_key and 'warning' not in err and len(re.findall(
                re.escape(m.duplicate_key) + r'\s*:', m.text)) > 1):
            outcome = 'silent'
        if m.huge_size:
            outcome = 'silent'
    elif code == 1 and 'error:' in err:
        outcome = 'refused'
    else:
        outcome = 'other'
    return outcome, path, err


def run_plan(args, index, m, work):
    path = os.path.join(work, 'p%d.json' % index)
    with open(path, 'w', encoding='utf-8') as f:
        f.write(m.text)
    env = dict(os.environ,
               ASAN_OPTIONS='allocator_may_return_null=1:allow_user_poisoning=0')
    try:
        p = subprocess.run([args.fuzz_plan, path], capture_output=True,
                           timeout=args.timeout, env=env)
    except subprocess.TimeoutExpired:
        return 'timeout', path, ''
    err = p.stderr.decode(errors='replace')
    return ('crash' if p.returncode != 0 or crashed(p.returncode, err)
            else 'handled'), path, err


def report(title, outcomes, keep):
    counts = collections.Counter(o for o, _, _ in outcomes)
    print('%s: %d inputs: %s' % (title, len(outcomes), ', '.join(
        '%s %d' % (k, counts[k]) for k in sorted(counts))))
    for outcome, path, err in outcomes:
        if outcome in ('crash', 'timeout', 'other', 'silent') and keep:
            os.makedirs(keep, exist_ok=True)
            target = os.path.join(keep, outcome + '-' +
                                  os.path.basename(os.path.dirname(path)) +
                                  '-' + os.path.basename(path))
            shutil.copy(path, target)
            with open(target + '.stderr', 'w') as f:
                f.write(err[-4000:])
    return counts


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--attnc', help='attnc binary (descriptions)')
    parser.add_argument('--descriptions', type=int, default=7300)
    parser.add_argument('--fuzz-plan', help='build-fuzz/bin/fuzz-plan (plans)')
    parser.add_argument('--plan', default=os.path.join(
        ROOT, 'build-fuzz/test/runtime/llama_tiny.attnc/llama_tiny_plan.json'))
    parser.add_argument('--plans', type=int, default=264)
    parser.add_argument('--seed', type=int, default=21)
    parser.add_argument('--jobs', type=int, default=os.cpu_count() or 2)
    parser.add_argument('--timeout', type=float, default=60)
    parser.add_argument('--keep', help='copy crashing and silent inputs here')
    args = parser.parse_args()
    if not args.attnc and not args.fuzz_plan:
        parser.error('give --attnc, --fuzz-plan or both')
    rng = random.Random(args.seed)
    seeds = description_seeds()
    work = tempfile.mkdtemp(prefix='attn-campaign-')
    failed = False
    try:
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            if args.attnc:
                jobs = []
                for i in range(args.descriptions):
                    name, text = rng.choice(seeds)
                    jobs.append(pool.submit(run_description, args, i, name,
                                            mutate(text, rng), work))
                counts = report('descriptions (%d seeds)' % len(seeds),
                                [j.result() for j in jobs], args.keep)
                failed |= counts['crash'] + counts['timeout'] > 0
            if args.fuzz_plan:
                plan = open(args.plan, encoding='utf-8').read()
                jobs = [pool.submit(run_plan, args, i,
                                    mutate(plan, rng, structural_only=True),
                                    work) for i in range(args.plans)]
                counts = report('plans', [j.result() for j in jobs], args.keep)
                failed |= counts['crash'] + counts['timeout'] > 0
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
