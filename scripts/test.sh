#!/usr/bin/env bash
# The README's test command (and CI's): set up, build, run every test suite,
# then the runtime tests again under AddressSanitizer + UBSan.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
ctest --test-dir build --output-on-failure

# The runtime (KV cache, C API, the device path on PoCL, every checkpoint
# family's tensors and forward pass: hf-reference-test; the GGUF reader)
# must be clean under the sanitizers.
# Kernels for the sanitized tests come from the release attnc just built.
[ -f build-asan/build.ninja ] ||
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DATTN_SANITIZE=ON \
    -DATTN_HOST_ATTNC="$PWD/build/bin/attnc" -DATTN_TOKENIZER_DATA="$PWD/build/tokenizer-data"
cmake --build build-asan --target runtime-test c-api-test model-test serving-test \
  random-llama-weights model-c-api-test opencl-model-test tokenizer-test tokenizer-c-api-test \
  attn-serve attn-run write-random-checkpoint hf-reference-test gguf-test
# allocator_may_return_null: tests ask for pools larger than the machine
# (the runtime must answer ATTN_OUT_OF_MEMORY), which ASan would otherwise
# report as a fatal error instead of failing the allocation.
ASAN_OPTIONS=allocator_may_return_null=1 ctest --test-dir build-asan --output-on-failure \
  -R '^(runtime-test|c-api-test|model-test|serving-test|random-llama-weights|model-c-api-test|opencl-model-test|tokenizer-test|tokenizer-c-api-test|hf-reference-test|gguf-test)$'
# attn-serve under ASan + UBSan, spoken to by the serve test (logprobs,
# chunked prefill, the prefix cache, /metrics, the drain).
ATTNC="$PWD/build/bin/attnc" ASAN_OPTIONS=allocator_may_return_null=1 \
  /usr/bin/python3 test/apps/attn_serve_test.py build-asan/bin build/tokenizer-data

# One model shared by threads (what a server does) must be free of data
# races: the model tests (GeneratorTest.ThreadsShareOneModel: four threads,
# one model), the tokenizer tests (four threads, one tokenizer) and
# attn-serve under
# ThreadSanitizer, kernels again from the release attnc
# (they are not instrumented; the runtime around them is). scripts/tsan.supp
# says what is silenced and why.
[ -f build-tsan/build.ninja ] ||
  cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DATTN_TSAN=ON \
    -DATTN_HOST_ATTNC="$PWD/build/bin/attnc" -DATTN_TOKENIZER_DATA="$PWD/build/tokenizer-data"
cmake --build build-tsan --target model-test serving-test tokenizer-test attn-serve attn-run \
  write-random-checkpoint model-library-c-test
TSAN_OPTIONS="halt_on_error=1 suppressions=$PWD/scripts/tsan.supp" build-tsan/bin/model-test
TSAN_OPTIONS="halt_on_error=1 suppressions=$PWD/scripts/tsan.supp" build-tsan/bin/serving-test
TSAN_OPTIONS="halt_on_error=1" build-tsan/bin/tokenizer-test
# attn-serve's HTTP threads and engine worker, spoken to by the serve test
# (concurrent, streaming, disconnecting clients); a race stops the server.
ATTNC="$PWD/build/bin/attnc" \
  TSAN_OPTIONS="halt_on_error=1 suppressions=$PWD/scripts/tsan.supp" \
  /usr/bin/python3 test/apps/attn_serve_test.py build-tsan/bin build/tokenizer-data

# The fuzzers (fuzz/): libFuzzer in a clang build with ASan + UBSan, each
# run briefly from its seed corpus, so a regression in an input path shows
# here; kernels again from the release attnc.
[ -f build-fuzz/build.ninja ] ||
  cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 -DATTN_FUZZ=ON \
    -DATTN_SANITIZE=ON -DATTN_HOST_ATTNC="$PWD/build/bin/attnc"
cmake --build build-fuzz --target fuzz-description fuzz-mlir fuzz-safetensors fuzz-gguf fuzz-plan \
  fuzz-tokenizer fuzz-chat-template fuzz-openai-request
scripts/run-fuzzers.sh
