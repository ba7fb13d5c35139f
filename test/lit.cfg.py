# -*- Python -*-
import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "ATTN"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "kernels", "runtime"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.attn_obj_root, "test")

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tool_dirs = [config.attn_tools_dir, config.llvm_tools_dir]
tools = [ToolSubst("attnc", unresolved="fatal"), ToolSubst("attn-opt", unresolved="fatal"),
         ToolSubst("attn-translate", unresolved="fatal"),
         ToolSubst("attn-generate", unresolved="fatal"),
         ToolSubst("attn-tune", unresolved="fatal")]
llvm_config.add_tool_substitutions(tools, tool_dirs)

# The CUDA toolkit's ptxas, where installed: tests that assemble the PTX a
# CUDA-target library embeds need it (REQUIRES: ptxas).
import shutil
import sys
ptxas = shutil.which("ptxas") or (
    "/usr/local/cuda/bin/ptxas" if os.path.exists("/usr/local/cuda/bin/ptxas") else None)
if ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))
config.substitutions.append(("%numpy-python", config.reference_python))
config.substitutions.append(("%python", sys.executable))
