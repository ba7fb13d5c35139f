//===- TestCommand.h - a helper program's output, for gtest suites -*- C++ -*-===//
//
// Tests that check attnc against independent programs (tools/*.py, node
// scripts) run them through a shell and read what they print.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TEST_TESTCOMMAND_H
#define ATTN_TEST_TESTCOMMAND_H

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace attn::test {

/// Runs `command` through the shell; its standard output. A command that
/// cannot start or exits non-zero fails the calling test (`what` says
/// what was wanted of it).
inline std::string commandOutput(const std::string &command,
                                 const std::string &what = "") {
  FILE *pipe = popen(command.c_str(), "r");
  EXPECT_NE(pipe, nullptr) << command;
  std::string output;
  char buffer[65536];
  for (size_t n; pipe && (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;)
    output.append(buffer, n);
  EXPECT_EQ(pipe ? pclose(pipe) : -1, 0) << command << " failed" << what;
  return output;
}

} // namespace attn::test

#endif // ATTN_TEST_TESTCOMMAND_H
