# attn_add_model(NAME <name> DESCRIPTION <file.json|file.mlir>
#                [TARGETS <attnc --target list>] [ATTNC_ARGS ...])
#
# Kernels are compiled for TARGETS, by default ${ATTN_TARGETS} (one variant
# per CPU target, picked at run time by the CPU's features; a `cuda` target
# adds <kernel>_cuda twins).
#
# Runs attnc at build time on DESCRIPTION and defines the target attn::<name>:
# link it to get the generated kernels (<name>.a) and include <name>.h; the
# plan is <name>_plan.json in the target's ATTN_PLAN property. Generation reruns only
# when the description or attnc itself changes.
# With ATTN_HOST_ATTNC set (a path), that attnc generates the kernels instead
# of the one this build compiles: a sanitizer build then instruments only the
# runtime and its tests, not the compiler.
# (An installed attnc's package config sets it before including this file.)
# With ATTN_SCHEDULE_DB set (a tuning database from attn-tune), attnc takes
# the schedules it has for the kernels and ${ATTN_TARGETS}; changing the file
# regenerates the kernels.
if(NOT DEFINED ATTN_HOST_ATTNC)
  set(ATTN_HOST_ATTNC "" CACHE FILEPATH "attnc to generate kernels with (empty: build it)")
endif()
if(NOT DEFINED ATTN_SCHEDULE_DB)
  set(ATTN_SCHEDULE_DB "" CACHE FILEPATH "tuning database attnc reads (empty: heuristics)")
endif()

function(attn_add_model)
  cmake_parse_arguments(ARG "" "NAME;DESCRIPTION;TARGETS" "ATTNC_ARGS" ${ARGN})
  if(NOT ARG_TARGETS)
    set(ARG_TARGETS ${ATTN_TARGETS})
  endif()
  if(NOT ARG_NAME OR NOT ARG_DESCRIPTION)
    message(FATAL_ERROR "attn_add_model: NAME and DESCRIPTION are required")
  endif()
  get_filename_component(description ${ARG_DESCRIPTION} ABSOLUTE)
  set(out_dir ${CMAKE_CURRENT_BINARY_DIR}/${ARG_NAME}.attnc)
  set(outputs ${out_dir}/${ARG_NAME}.a ${out_dir}/${ARG_NAME}.h
              ${out_dir}/${ARG_NAME}_kernels.h ${out_dir}/${ARG_NAME}_plan.json)
  if(ATTN_HOST_ATTNC)
    set(attnc_command ${ATTN_HOST_ATTNC})
    set(attnc_dependency ${ATTN_HOST_ATTNC})
  else()
    set(attnc_command attnc)
    set(attnc_dependency attnc)
  endif()
  set(schedule_args "")
  set(schedule_dependency "")
  if(ATTN_SCHEDULE_DB)
    set(schedule_args --schedule-db=${ATTN_SCHEDULE_DB})
    set(schedule_dependency ${ATTN_SCHEDULE_DB})
  endif()
  add_custom_command(
    OUTPUT ${outputs}
    COMMAND ${attnc_command} ${description} --name=${ARG_NAME} -o ${out_dir}
            --target=${ARG_TARGETS} ${schedule_args} ${ARG_ATTNC_ARGS}
    DEPENDS ${attnc_dependency} ${description} ${schedule_dependency}
    COMMENT "attnc: generating kernels for ${ARG_NAME}"
    VERBATIM)
  add_custom_target(${ARG_NAME}_attnc DEPENDS ${outputs})

  set(target attn::${ARG_NAME})
  add_library(${target} STATIC IMPORTED GLOBAL)
  set_target_properties(${target} PROPERTIES IMPORTED_LOCATION ${out_dir}/${ARG_NAME}.a)
  # The include directory only exists after generation; create it so CMake accepts it.
  file(MAKE_DIRECTORY ${out_dir})
  target_include_directories(${target} INTERFACE ${out_dir})
  # The library embeds the Halide runtime, which uses threads and dlopen.
  target_link_libraries(${target} INTERFACE Halide::Runtime Threads::Threads ${CMAKE_DL_LIBS})
  set_target_properties(${target} PROPERTIES ATTN_PLAN ${out_dir}/${ARG_NAME}_plan.json)
  add_dependencies(${target} ${ARG_NAME}_attnc)
endfunction()
