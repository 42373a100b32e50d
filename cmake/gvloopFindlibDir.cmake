# SPDX-License-Identifier: MIT
# gvloop_findlib_dir(<out var> <ocamlfind>): the directory, relative to the
# install prefix when it is under it, in which gvloop's findlib package
# (gvloop/META and its subdirectories) goes: one on the search path of the
# ocamlfind that will use it, so that `-package gvloop.threads` works without
# OCAMLPATH.
#
# ocamlfind is asked for its destination directory and its search path
# (with OCAMLPATH unset).  The destination directory is taken when it is on
# the search path and under <prefix>/lib (Debian's
# /usr/local/lib/ocaml/<version> for the prefix /usr/local), else the first
# search path entry under <prefix>/lib that is not a directory of META files
# only (Debian's /usr/lib/ocaml for /usr).  With none (a private prefix),
# <libdir>/ocaml: then the package is found with
# OCAMLPATH=<prefix>/<libdir>/ocaml.  -DGVLOOP_OCAML_INSTALL_DIR=<dir>
# overrides the choice.
include_guard(GLOBAL)

function(gvloop_findlib_dir out ocamlfind)
  set(GVLOOP_OCAML_INSTALL_DIR "" CACHE STRING
      "Directory on findlib's search path for gvloop's OCaml package (empty: ask ocamlfind)")
  if(GVLOOP_OCAML_INSTALL_DIR)
    set(${out} "${GVLOOP_OCAML_INSTALL_DIR}" PARENT_SCOPE)
    return()
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=OCAMLPATH --unset=OCAMLFIND_DESTDIR
                          ${ocamlfind} printconf destdir
    OUTPUT_VARIABLE destdir ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=OCAMLPATH ${ocamlfind} printconf path
    OUTPUT_VARIABLE paths ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
  string(REPLACE "\n" ";" paths "${paths}")
  list(TRANSFORM paths REPLACE "/+$" "")
  string(REGEX REPLACE "/+$" "" destdir "${destdir}")
  string(REGEX REPLACE "/+$" "" prefix "${CMAKE_INSTALL_PREFIX}")
  set(best "")
  foreach(p IN ITEMS "${destdir}" ${paths})
    string(FIND "${p}" "${prefix}/lib/" pos)
    if(pos EQUAL 0 AND p IN_LIST paths AND NOT p MATCHES "/METAS$")
      set(best "${p}")
      break()
    endif()
  endforeach()
  if(best)
    file(RELATIVE_PATH rel "${prefix}" "${best}")
    message(STATUS "hosts/ocaml: findlib package installs into ${best} (on ${ocamlfind}'s search path)")
    set(${out} "${rel}" PARENT_SCOPE)
  else()
    message(STATUS "hosts/ocaml: no directory of ${ocamlfind}'s search path under ${prefix}; "
                   "the findlib package installs into ${CMAKE_INSTALL_FULL_LIBDIR}/ocaml (use OCAMLPATH)")
    set(${out} "${CMAKE_INSTALL_LIBDIR}/ocaml" PARENT_SCOPE)
  endif()
endfunction()
