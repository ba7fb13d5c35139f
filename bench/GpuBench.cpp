//===- GpuBench.cpp - the CUDA kernels on a device, against its limits
//-----===//
//
// attn-gpu-bench: prefill and decode attention JIT-compiled for the
// machine's GPU, inputs resident on the device, timed from the host around
// a device synchronization. Counters as attn-bench's: GFLOPS (4·B·Hq·Sq·Skv·D,
// halved for causal), GBps (K/V bytes), peak_pct over the device's fp32 FMA
// peak (SMs x fp32 lanes per SM x 2 x clock, from the driver's attributes)
// and bw_pct over a device triad measured at start-up. Without a CUDA
// device it says why and exits 0. tools/gpu-check.sh runs it.
//
//===----------------------------------------------------------------------===//

#include "CallTimer.h"

#include "attn/runtime/DeviceProbe.h"
#include "attn/schedules/CudaDevice.h"
#include "attn/schedules/Pipelines.h"

#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <random>

using namespace Halide;

namespace {

struct DeviceLimits {
  double fmaGflops = 0, triadGBps = 0;
  std::string name;
};
DeviceLimits gDevice;
Target gTarget;

/// The device's theoretical fp32 FMA rate from the driver, or 0.
double fmaPeakFromDriver(void *driver, std::string &name) {
  using GetFn = int (*)(int *, int, int);
  using NameFn = int (*)(char *, int, int);
  auto attribute =
      reinterpret_cast<GetFn>(dlsym(driver, "cuDeviceGetAttribute"));
  auto deviceName = reinterpret_cast<NameFn>(dlsym(driver, "cuDeviceGetName"));
  if (!attribute)
    return 0;
  // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16, CLOCK_RATE 13 (kHz),
  // COMPUTE_CAPABILITY_MAJOR 75, MINOR 76.
  int sms = 0, clockKhz = 0, major = 0, minor = 0;
  attribute(&sms, 16, 0);
  attribute(&clockKhz, 13, 0);
  attribute(&major, 75, 0);
  attribute(&minor, 76, 0);
  char text[256] = {};
  if (deviceName && deviceName(text, sizeof text, 0) == 0)
    name = text;
  // fp32 lanes per SM: 64 on sm_80 (A100), 128 on sm_86/89/90.
  const int lanes = major == 8 && minor == 0 ? 64 : 128;
  return 2.0 * sms * lanes * clockKhz * 1e3 / 1e9;
}

/// Why there is nothing to measure; empty when a device is usable.
std::string openDevice() {
  void *driver = nullptr;
  std::string reason = attn::runtime::whyNoDevice("cuda", &driver);
  if (reason.empty())
    gDevice.fmaGflops = fmaPeakFromDriver(driver, gDevice.name);
  return reason;
}

Buffer<float> deviceRandom(std::vector<int> sizes, std::mt19937 &rng) {
  Buffer<float> buffer(sizes);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  buffer.for_each_value([&](float &x) { x = uniform(rng); });
  buffer.copy_to_device(DeviceAPI::CUDA, gTarget);
  return buffer;
}

/// a = b + 3·c over 2^26 floats per array, on the device.
double measureTriad() {
  ImageParam b(Float(32), 1, "b"), c(Float(32), 1, "c");
  Func a("a");
  Var i("i"), io("io"), ii("ii");
  a(i) = b(i) + 3.0f * c(i);
  a.gpu_tile(i, io, ii, 256);
  a.compile_jit(gTarget);
  const int n = 1 << 26;
  std::mt19937 rng(1);
  Buffer<float> bb = deviceRandom({n}, rng), cb = deviceRandom({n}, rng),
                out(n);
  out.copy_to_device(DeviceAPI::CUDA, gTarget);
  ParamMap params;
  params.set(b, bb);
  params.set(c, cb);
  double best = 1e30;
  for (int repeat = 0; repeat < 10; repeat++) {
    auto start = std::chrono::steady_clock::now();
    a.realize(out, gTarget, params);
    out.device_sync();
    best = std::min(best, std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - start)
                              .count());
  }
  return 3.0 * n * 4 / best / 1e9;
}

void prefill(benchmark::State &state, int hkv, int seq, bool causal) {
  const int hq = 32, d = 128;
  attn::SdpaSpec spec;
  spec.functionName = "bench";
  spec.numQueryHeads = hq;
  spec.numKvHeads = hkv;
  spec.headDim = d;
  spec.causal = causal;
  spec.scale = 1.0f / std::sqrt(float(d));
  attn::KernelPipeline kernel = attn::buildSdpaPipeline(spec, gTarget);
  kernel.pipeline.compile_jit(gTarget);
  std::mt19937 rng(2);
  Buffer<float> q = deviceRandom({d, hq, seq, 1}, rng),
                k = deviceRandom({d, hkv, seq, 1}, rng),
                v = deviceRandom({d, hkv, seq, 1}, rng), out(d, hq, seq, 1);
  out.copy_to_device(DeviceAPI::CUDA, gTarget);
  ParamMap params;
  params.set(kernel.inputs[0], q);
  params.set(kernel.inputs[1], k);
  params.set(kernel.inputs[2], v);
  double flops = 4.0 * hq * double(seq) * seq * d / (causal ? 2 : 1);
  attn::bench::timeCalls(state, flops, 2.0 * hkv * double(seq) * d * 4,
                         {gDevice.fmaGflops, gDevice.triadGBps}, [&] {
                           kernel.pipeline.realize(out, gTarget, params);
                           out.device_sync();
                         });
}

void decode(benchmark::State &state, int batch, int kvLength) {
  const int hq = 32, hkv = 8, d = 128;
  attn::DecodeSpec spec;
  spec.functionName = "bench";
  spec.numQueryHeads = hq;
  spec.numKvHeads = hkv;
  spec.headDim = d;
  spec.pageSize = kvLength; // contiguous: a page per sequence
  spec.scale = 1.0f / std::sqrt(float(d));
  attn::KernelPipeline kernel = attn::buildDecodePipeline(spec, gTarget);
  kernel.pipeline.compile_jit(gTarget);
  std::mt19937 rng(3);
  Buffer<float> q = deviceRandom({d, hq, 1, batch}, rng),
                k = deviceRandom({d, hkv, kvLength, batch}, rng),
                v = deviceRandom({d, hkv, kvLength, batch}, rng),
                out(d, hq, 1, batch);
  Buffer<int32_t> table(1, batch), lengths(batch);
  for (int b = 0; b < batch; b++) {
    table(0, b) = b;
    lengths(b) = kvLength;
  }
  table.copy_to_device(DeviceAPI::CUDA, gTarget);
  lengths.copy_to_device(DeviceAPI::CUDA, gTarget);
  out.copy_to_device(DeviceAPI::CUDA, gTarget);
  ParamMap params;
  params.set(kernel.inputs[0], q);
  params.set(kernel.inputs[1], k);
  params.set(kernel.inputs[2], v);
  params.set(kernel.inputs[3], table);
  params.set(kernel.inputs[4], lengths);
  attn::bench::timeCalls(state, 4.0 * batch * hq * double(kvLength) * d,
                         2.0 * batch * hkv * double(kvLength) * d * 4,
                         {gDevice.fmaGflops, gDevice.triadGBps}, [&] {
                           kernel.pipeline.realize(out, gTarget, params);
                           out.device_sync();
                         });
}

} // namespace

int main(int argc, char **argv) {
  benchmark::Initialize(&argc, argv);
  std::string reason = openDevice();
  if (!reason.empty()) {
    std::printf("attn-gpu-bench: nothing to measure: %s\n", reason.c_str());
    return 0;
  }
  gTarget = attn::cudaJitTarget();
  gDevice.triadGBps = measureTriad();
  std::printf("device: %s, fp32 FMA peak %.0f GFLOP/s, triad %.0f GB/s; "
              "Halide target %s\n",
              gDevice.name.c_str(), gDevice.fmaGflops, gDevice.triadGBps,
              gTarget.to_string().c_str());
  for (int hkv : {32, 8})
    for (bool causal : {false, true})
      for (int seq : {2048, 8192}) {
        std::string name = "gpu_prefill/H32_KV" + std::to_string(hkv) +
                           "_D128_S" + std::to_string(seq) +
                           (causal ? "_causal" : "_full");
        benchmark::RegisterBenchmark(name.c_str(), prefill, hkv, seq, causal)
            ->UseManualTime()
            ->Unit(benchmark::kMillisecond);
      }
  for (auto [batch, length] : {std::pair{1, 131072}, std::pair{16, 32768}}) {
    std::string name = "gpu_decode/H32_KV8_D128/B" + std::to_string(batch) +
                       "_KV" + std::to_string(length) + "_contiguous_f32";
    benchmark::RegisterBenchmark(name.c_str(), decode, batch, length)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
