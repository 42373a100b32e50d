# SPDX-License-Identifier: MIT
# gvloop_exports(TARGET GLOB): the shared library TARGET exports only the
# symbols matching GLOB (an anonymous version script: no symbol versions).
# Hidden visibility already keeps internal functions out; the script also
# keeps out what the linker itself would export (_edata, _end, __bss_start).
function(gvloop_exports target glob)
  set(map ${CMAKE_CURRENT_BINARY_DIR}/${target}.map)
  file(WRITE ${map} "{\n  global: ${glob};\n  local: *;\n};\n")
  target_link_options(${target} PRIVATE "LINKER:--version-script=${map}")
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${map})
endfunction()
