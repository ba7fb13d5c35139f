//===- GpuPtxTest.cpp - every kernel family's CUDA schedule gives valid PTX
//===//
//
// No GPU runs here (CI has none): each pipeline is compiled for a CUDA
// target, the PTX Halide embeds in the host code is taken out of the LLVM
// assembly, and, when the CUDA toolkit is installed (/usr/local/cuda, or
// $ATTN_PTXAS), ptxas assembles it for sm_80 and sm_90: what the driver's
// JIT would do on an A100 or H100. Without ptxas the PTX is still generated
// and checked to hold kernel entries, and the test reports itself skipped.
// Numerics on a device are tools/gpu-check.sh's job.
//
//===----------------------------------------------------------------------===//

#include "attn/schedules/Pipelines.h"

#include "TestDirectory.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <sys/stat.h>

namespace {

/// Halide 14's newest CUDA capability; PTX for sm_80 runs on sm_90 too.
const Halide::Target kCudaTarget("x86-64-linux-cuda-cuda_capability_80");

std::string ptxasPath() {
  if (const char *path = std::getenv("ATTN_PTXAS"))
    return path;
  struct stat info;
  const char *standard = "/usr/local/cuda/bin/ptxas";
  return stat(standard, &info) == 0 ? standard : "";
}

/// The PTX of the `cuda_gpu_source_kernels` constant in LLVM assembly: a
/// c"..." string with \XX escapes.
std::string embeddedPtx(const std::string &llvmAssembly) {
  const std::string global = "@cuda_gpu_source_kernels";
  size_t at = llvmAssembly.find(global);
  if (at == std::string::npos)
    return "";
  at = llvmAssembly.find("c\"", at);
  if (at == std::string::npos)
    return "";
  std::string ptx;
  for (size_t i = at + 2; i < llvmAssembly.size() && llvmAssembly[i] != '"';
       i++) {
    if (llvmAssembly[i] == '\\' && i + 2 < llvmAssembly.size()) {
      ptx.push_back(
          char(std::stoi(llvmAssembly.substr(i + 1, 2), nullptr, 16)));
      i += 2;
    } else {
      ptx.push_back(llvmAssembly[i]);
    }
  }
  while (!ptx.empty() && ptx.back() == '\0')
    ptx.pop_back();
  return ptx;
}

std::string readFile(const std::string &path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct GpuCase {
  std::string name;
  std::function<attn::KernelPipeline(const Halide::Target &)> build;
};

class GpuPtxTest : public testing::TestWithParam<GpuCase> {};

TEST_P(GpuPtxTest, PtxAssemblesForSm80AndSm90) {
  const GpuCase &c = GetParam();
  attn::KernelPipeline kernel = c.build(kCudaTarget);
  const std::string base = attn::test::testDirectory() + "/attn_gpu_" + c.name;
  kernel.pipeline.compile_to_llvm_assembly(base + ".ll", kernel.arguments(),
                                           c.name, kCudaTarget);
  const std::string ptx = embeddedPtx(readFile(base + ".ll"));
  ASSERT_NE(ptx.find(".entry"), std::string::npos)
      << "no CUDA kernel in " << base << ".ll: the schedule ran on the host";
  {
    std::ofstream out(base + ".ptx");
    out << ptx;
  }
  const std::string ptxas = ptxasPath();
  if (ptxas.empty())
    GTEST_SKIP() << "PTX generated (" << ptx.size()
                 << " bytes) but not validated: no ptxas (install the CUDA "
                    "toolkit at /usr/local/cuda or set ATTN_PTXAS)";
  for (const char *arch : {"sm_80", "sm_90"}) {
    const std::string log = base + "_" + arch + ".log";
    const std::string command = ptxas + " -arch=" + arch + " " + base +
                                ".ptx -o " + base + "_" + arch + ".cubin > " +
                                log + " 2>&1";
    EXPECT_EQ(std::system(command.c_str()), 0) << arch << ": " << readFile(log);
  }
}

attn::SdpaSpec prefill(int hq, int hkv, int d, bool causal) {
  attn::SdpaSpec spec;
  spec.functionName = "prefill";
  spec.numQueryHeads = hq;
  spec.numKvHeads = hkv;
  spec.headDim = d;
  spec.causal = causal;
  spec.scale = 1.0f / std::sqrt(float(d));
  return spec;
}

attn::DecodeSpec decode(attn::DType element, int pageSize) {
  attn::DecodeSpec spec;
  spec.functionName = "decode";
  spec.numQueryHeads = 32;
  spec.numKvHeads = 8;
  spec.headDim = 128;
  spec.pageSize = pageSize;
  spec.cacheElement = element;
  spec.scale = 1.0f / std::sqrt(128.0f);
  return spec;
}

attn::LinearSpec linear(int in, int out) {
  attn::LinearSpec spec;
  spec.functionName = "linear";
  spec.inFeatures = in;
  spec.outFeatures = out;
  return spec;
}

std::vector<GpuCase> cases() {
  using attn::DType;
  std::vector<GpuCase> all;
  auto add = [&](std::string name, auto build) {
    all.push_back({std::move(name), build});
  };
  add("prefill_mha_d128", [](const Halide::Target &t) {
    return attn::buildSdpaPipeline(prefill(32, 32, 128, false), t);
  });
  add("prefill_gqa_causal_d64", [](const Halide::Target &t) {
    return attn::buildSdpaPipeline(prefill(32, 8, 64, true), t);
  });
  add("prefill_window_softcap_alibi_padding_d80", [](const Halide::Target &t) {
    attn::SdpaSpec spec = prefill(12, 4, 80, true);
    spec.window = 256;
    spec.softcap = 50.0f;
    spec.alibi = true;
    spec.keyPadding = true;
    return attn::buildSdpaPipeline(spec, t);
  });
  add("prefill_bf16_compute_d128", [](const Halide::Target &t) {
    attn::SdpaSpec spec = prefill(32, 8, 128, true);
    spec.compute = attn::SdpaCompute::BF16; // fp32 on the GPU
    return attn::buildSdpaPipeline(spec, t);
  });
  add("prefill_sinks_window_d64", [](const Halide::Target &t) {
    attn::SdpaSpec spec = prefill(64, 8, 64, true);
    spec.window = 128;
    spec.sinks = true;
    return attn::buildSdpaPipeline(spec, t);
  });
  add("decode_sinks_bf16_page16", [](const Halide::Target &t) {
    attn::DecodeSpec spec = decode(DType::BF16, 16);
    spec.sinks = true;
    return attn::buildDecodePipeline(spec, t);
  });
  add("decode_f32_page16", [](const Halide::Target &t) {
    return attn::buildDecodePipeline(decode(DType::F32, 16), t);
  });
  add("decode_f16_contiguous", [](const Halide::Target &t) {
    return attn::buildDecodePipeline(decode(DType::F16, 4096), t);
  });
  add("decode_bf16_window", [](const Halide::Target &t) {
    attn::DecodeSpec spec = decode(DType::BF16, 16);
    spec.window = 1024;
    return attn::buildDecodePipeline(spec, t);
  });
  add("decode_i8_page32", [](const Halide::Target &t) {
    return attn::buildDecodePipeline(decode(DType::I8, 32), t);
  });
  add("linear_qkv_rope_append_f16", [](const Halide::Target &t) {
    attn::LinearSpec spec = linear(512, 768);
    spec.bias = true;
    spec.ropeTheta = 10000.0f;
    spec.ropeHeads = 6;
    spec.ropeHeadDim = 64;
    spec.cacheAppend = {2, 64, DType::F16};
    return attn::buildLinearPipeline(spec, t);
  });
  // QK-norm per head (Qwen3) and over the whole projections (OLMo 2).
  for (attn::QkNormScope scope :
       {attn::QkNormScope::Head, attn::QkNormScope::Projection})
    add(scope == attn::QkNormScope::Head ? "linear_qkv_qknorm_head"
                                         : "linear_qkv_qknorm_projection",
        [scope](const Halide::Target &t) {
          attn::LinearSpec spec = linear(512, 768);
          spec.ropeTheta = 10000.0f;
          spec.ropeHeads = 6;
          spec.ropeHeadDim = 64;
          spec.qkNormEps = 1e-6f;
          spec.qkNormScope = scope;
          spec.cacheAppend = {2, 64, DType::F32};
          return attn::buildLinearPipeline(spec, t);
        });
  add("linear_kv_append_bf16", [](const Halide::Target &t) {
    attn::LinearSpec spec = linear(256, 256);
    spec.cacheAppend = {2, 64, DType::BF16};
    return attn::buildLinearPipeline(spec, t);
  });
  add("linear_kv_append_i8", [](const Halide::Target &t) {
    attn::LinearSpec spec = linear(256, 256);
    spec.cacheAppend = {2, 64, DType::I8};
    return attn::buildLinearPipeline(spec, t);
  });
  add("linear_gelu_bias", [](const Halide::Target &t) {
    attn::LinearSpec spec = linear(256, 1024);
    spec.bias = true;
    spec.activation = attn::Activation::Gelu;
    return attn::buildLinearPipeline(spec, t);
  });
  add("linear_swiglu_down_residual", [](const Halide::Target &t) {
    attn::LinearSpec spec = linear(1024, 256);
    spec.inputGate = attn::Activation::Silu;
    spec.residual = true;
    return attn::buildLinearPipeline(spec, t);
  });
  add("output_head_argmax", [](const Halide::Target &t) {
    attn::LinearSpec spec = linear(512, 32003);
    spec.bias = true;
    spec.argmax = true;
    return attn::buildLinearPipeline(spec, t);
  });
  add("layer_norm", [](const Halide::Target &t) {
    attn::NormSpec spec;
    spec.functionName = "norm";
    spec.dim = 768;
    return attn::buildNormPipeline(spec, t);
  });
  add("rms_norm_odd", [](const Halide::Target &t) {
    attn::NormSpec spec;
    spec.functionName = "norm";
    spec.kind = attn::NormKind::RmsNorm;
    spec.dim = 100;
    return attn::buildNormPipeline(spec, t);
  });
  add("embedding_learned_offset", [](const Halide::Target &t) {
    attn::EmbeddingSpec spec;
    spec.functionName = "embedding";
    spec.vocabSize = 1000;
    spec.dim = 96;
    spec.positions = attn::PositionKind::Learned;
    spec.maxPositions = 512;
    spec.positionOffset = 2;
    spec.scale = 9.8f;
    return attn::buildEmbeddingPipeline(spec, t);
  });
  return all;
}

INSTANTIATE_TEST_SUITE_P(Families, GpuPtxTest, testing::ValuesIn(cases()),
                         [](const testing::TestParamInfo<GpuCase> &info) {
                           return info.param.name;
                         });

} // namespace
