//===- FuzzScratch.h - one private scratch file per fuzzer process -*- C++ -*-===//
//
// Readers that take paths get each input through a file in a temporary
// directory of the process's own, removed when the process exits.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_FUZZ_FUZZSCRATCH_H
#define ATTN_FUZZ_FUZZSCRATCH_H

#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

/// The path of this process's scratch file (`name` in its own directory).
inline const std::string &fuzzScratchFile(const char *name) {
  static std::string directory, path;
  if (path.empty()) {
    char pattern[] = "/tmp/attn-fuzz-XXXXXX";
    directory = mkdtemp(pattern) ? pattern : "/tmp";
    path = directory + "/" + name;
    std::atexit([] {
      std::remove(path.c_str());
      if (directory != "/tmp")
        rmdir(directory.c_str());
    });
  }
  return path;
}

#endif // ATTN_FUZZ_FUZZSCRATCH_H
