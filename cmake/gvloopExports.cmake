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

# gvloop_nodelete(TARGET): once loaded, the shared library TARGET stays in
# the process (-z nodelete), also when whatever loaded it is unloaded
# (Tcl's `unload`, dlclose).  libgvl owns a thread-specific key whose
# destructor runs at the exit of every attached thread, and a new copy
# would take another key (glibc has 1024); libevloop installs signal
# handlers and keeps libuv, whose pool threads never end; libtkbridge is
# Tcl's notifier.  None of that may point into unmapped code.
function(gvloop_nodelete target)
  target_link_options(${target} PRIVATE "LINKER:-z,nodelete")
endfunction()
