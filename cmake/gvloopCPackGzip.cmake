# SPDX-License-Identifier: MIT
# CPack pre-build script (cmake/gvloopCPack.cmake): in the staged tree of
# every package, compress the manual pages and the changelogs with gzip -9n,
# as Debian policy asks.  A page that only sources another (`.so man3/x.3`)
# is compressed too: man-db finds the compressed target.
find_program(GZIP gzip REQUIRED)
file(GLOB_RECURSE _files LIST_DIRECTORIES false "${CPACK_TEMPORARY_INSTALL_DIRECTORY}/*")
set(_n 0)
foreach(_f IN LISTS _files)
  if(IS_SYMLINK "${_f}" OR _f MATCHES "\\.gz$" OR
     NOT _f MATCHES "/share/man/man[^/]+/[^/]+$|/share/doc/[^/]+/changelog(\\.Debian)?$")
    continue()
  endif()
  math(EXPR _n "${_n} + 1")
  execute_process(COMMAND "${GZIP}" -9nf "${_f}" RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "gzip -9n ${_f} failed: ${_rc}")
  endif()
endforeach()
message(STATUS "gzip -9n: ${_n} manual pages and changelogs")
