# SPDX-License-Identifier: MIT
# gvloop_tcl_pkgdir(<out var>): the directory, relative to the install prefix
# when it is under it, in which the gvloop Tcl package's own directory
# (gvloop<version>) goes: one on the auto_path of the Tcl that will load it,
# so stock tclsh and wish find the package without TCLLIBPATH.
#
# The installed tclsh is asked for its auto_path (Tcl's TCL_PACKAGE_PATH plus
# its library's parent).  Of the entries under CMAKE_INSTALL_PREFIX, binary
# package directories are preferred: one that names the multiarch triplet
# (Debian's /usr/lib/tcltk/<triplet>), then one under <prefix>/lib that is
# not <prefix>/lib itself (/usr/local/lib/tcltk); entries under share/ are for
# scripts only.  With none (a private prefix), <libdir>/tcltk: then the
# package is found with TCLLIBPATH=<prefix>/<libdir>/tcltk.
# -DGVLOOP_TCL_INSTALL_DIR=<dir> overrides the choice.
include_guard(GLOBAL)

function(gvloop_tcl_pkgdir out)
  set(GVLOOP_TCL_INSTALL_DIR "" CACHE STRING
      "Directory on Tcl's auto_path for the gvloop Tcl package (empty: ask tclsh)")
  if(GVLOOP_TCL_INSTALL_DIR)
    set(${out} "${GVLOOP_TCL_INSTALL_DIR}" PARENT_SCOPE)
    return()
  endif()
  find_program(GVLOOP_TCLSH NAMES tclsh8.6 tclsh)
  set(paths "")
  if(GVLOOP_TCLSH)
    file(WRITE "${CMAKE_CURRENT_BINARY_DIR}/auto_path.tcl" "puts [join \$auto_path \\n]\n")
    execute_process(COMMAND "${GVLOOP_TCLSH}" "${CMAKE_CURRENT_BINARY_DIR}/auto_path.tcl"
      OUTPUT_VARIABLE paths ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
    string(REPLACE "\n" ";" paths "${paths}")
  endif()
  string(REGEX REPLACE "/+$" "" prefix "${CMAKE_INSTALL_PREFIX}")
  set(best "")
  set(best_rank 0)
  foreach(p IN LISTS paths)
    string(REGEX REPLACE "/+$" "" p "${p}")
    string(FIND "${p}" "${prefix}/lib/" pos)
    if(NOT pos EQUAL 0 OR p MATCHES "/share/")
      continue()
    endif()
    set(rank 1)
    if(CMAKE_LIBRARY_ARCHITECTURE AND p MATCHES "/${CMAKE_LIBRARY_ARCHITECTURE}$")
      set(rank 3)
    elseif(p MATCHES "/tcltk$")
      set(rank 2)
    endif()
    if(rank GREATER best_rank)
      set(best "${p}")
      set(best_rank ${rank})
    endif()
  endforeach()
  if(best)
    file(RELATIVE_PATH rel "${prefix}" "${best}")
    message(STATUS "tclpkg: installs into ${best} (on ${GVLOOP_TCLSH}'s auto_path)")
    set(${out} "${rel}" PARENT_SCOPE)
  else()
    message(STATUS "tclpkg: no auto_path entry of ${GVLOOP_TCLSH} under ${prefix}; "
                   "installs into ${CMAKE_INSTALL_FULL_LIBDIR}/tcltk (use TCLLIBPATH)")
    set(${out} "${CMAKE_INSTALL_LIBDIR}/tcltk" PARENT_SCOPE)
  endif()
endfunction()
