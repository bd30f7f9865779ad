# Proves that the core layer knows nothing of the tools above it: a program that links only
# cudagap::core gets none of the diagnosis, the process spawning, the VRAM advisor or JSON.
# -D NM=<nm> -D CORE_LIBRARY=<file> -D TOOLS_LIBRARY=<file> -D CORE_SOURCE_DIR=<src/core>
# -D CORE_SOURCES=... -D CORE_HEADERS=... -D CORE_LINKS=... (lists joined by '|')
foreach(list IN ITEMS CORE_SOURCES CORE_HEADERS CORE_LINKS)
  string(REPLACE "|" ";" ${list} "${${list}}")
endforeach()
set(failures "")

# Symbols of the tools: each must be defined in cudagap_tools and appear nowhere in the core.
set(tool_symbols "gpu::tools::diagnose(" "gpu::tools::diagnosis::describe"
                 "gpu::tools::advise_vram(" "gpu::tools::measure_vram("
                 "gpu::tools::find_library_copies(" "gpu::tools::detail::run_tool("
                 "gpu::tools::detail::parse_smi_rows(")
# Names that no part of the core may define or use: the wrapped libraries and the JSON library.
set(foreign_names "cublas" "cudnn" "nlohmann")

function(symbols library out)
  execute_process(COMMAND "${NM}" -C "${library}" RESULT_VARIABLE result OUTPUT_VARIABLE text
                  ERROR_VARIABLE err)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "${NM} -C ${library} failed (${result}): ${err}")
  endif()
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

symbols("${TOOLS_LIBRARY}" tools_text)
symbols("${CORE_LIBRARY}" core_text)
foreach(symbol IN LISTS tool_symbols)
  string(FIND "${tools_text}" "${symbol}" in_tools)
  if(in_tools EQUAL -1)
    list(APPEND failures "the check is blind: ${TOOLS_LIBRARY} has no symbol '${symbol}'")
  endif()
  string(FIND "${core_text}" "${symbol}" in_core)
  if(NOT in_core EQUAL -1)
    list(APPEND failures "${CORE_LIBRARY} names the tools' '${symbol}'")
  endif()
endforeach()
string(TOLOWER "${core_text}" core_lower)
foreach(name IN LISTS foreign_names)
  string(FIND "${core_lower}" "${name}" at)
  if(NOT at EQUAL -1)
    list(APPEND failures "${CORE_LIBRARY} names '${name}'")
  endif()
endforeach()

# The core target: no source or header of the tools, no link to anything above the runtime.
foreach(file IN LISTS CORE_SOURCES CORE_HEADERS)
  if(file MATCHES "(^|/)src/tools/|gpu/tools|diagnose|vram|system_tools")
    list(APPEND failures "cudagap::core lists the tools' file ${file}")
  endif()
endforeach()
foreach(link IN LISTS CORE_LINKS)
  if(NOT link MATCHES "^CUDA::cudart(_static)?$")
    list(APPEND failures "cudagap::core links ${link}, not only the CUDA runtime")
  endif()
endforeach()

# The core's own files include nothing of a higher layer.
file(GLOB core_files "${CORE_SOURCE_DIR}/*.cpp" "${CORE_SOURCE_DIR}/*.hpp" "${CORE_SOURCE_DIR}/*.cu")
list(APPEND core_files ${CORE_HEADERS})
foreach(file IN LISTS core_files)
  file(STRINGS "${file}" includes REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]gpu/(tools|blas|dnn|nccl|nn|json)")
  foreach(line IN LISTS includes)
    list(APPEND failures "${file} includes a higher layer: ${line}")
  endforeach()
endforeach()

if(failures)
  list(JOIN failures "\n  " failures)
  message(FATAL_ERROR "cudagap::core pulls in more than the runtime layer:\n  ${failures}")
endif()
list(LENGTH core_files checked)
message(STATUS "cudagap::core: none of ${tool_symbols} in ${CORE_LIBRARY}; links ${CORE_LINKS}; "
               "${checked} files include no higher layer")
