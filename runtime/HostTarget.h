//===- HostTarget.h - can this CPU run code built for a Halide target -*- C++ -*-===//

#ifndef ATTN_RUNTIME_HOSTTARGET_H
#define ATTN_RUNTIME_HOSTTARGET_H

#include <string>

namespace attn::runtime {

/// Why this machine cannot run code compiled for `halideTarget` (a Halide
/// target string such as "x86-64-linux-avx2-fma-f16c-sse41"): another
/// architecture, or the instruction-set features it lacks, named. "" when
/// it can.
std::string whyHostCannotRun(const std::string &halideTarget);

} // namespace attn::runtime

#endif // ATTN_RUNTIME_HOSTTARGET_H
