//===- TestDirectory.h - a temporary directory per test process -*- C++ -*-===//
//
// Tests write their files (weights, checkpoints, PTX) here: a directory of
// their own under testing::TempDir(), removed with everything in it when
// the process exits, so runs leave nothing behind and two runs at once
// never share a name.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TEST_TESTDIRECTORY_H
#define ATTN_TEST_TESTDIRECTORY_H

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace attn::test {

/// The process's directory, created on first use; paths inside it are
/// `testDirectory() + "/" + name`.
inline const std::string &testDirectory() {
  struct Directory {
    std::string path;
    Directory() {
      path = testing::TempDir() + "/attn-test.XXXXXX";
      if (!mkdtemp(path.data()))
        std::abort(); // nowhere to write: every test would fail obscurely
    }
    ~Directory() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  };
  static const Directory directory;
  return directory.path;
}

/// A fresh directory inside testDirectory(), named after `name`.
inline std::string freshDirectory(const std::string &name) {
  std::string path = testDirectory() + "/" + name + ".XXXXXX";
  if (!mkdtemp(path.data()))
    ADD_FAILURE() << "cannot create " << path;
  return path;
}

} // namespace attn::test

#endif // ATTN_TEST_TESTDIRECTORY_H
