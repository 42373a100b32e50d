# SPDX-License-Identifier: MIT
# Imported targets for gvloop's outside dependencies, looked up on the machine
# that uses them: by gvloop's own build and, installed next to
# gvloopConfig.cmake, by every find_package(gvloop).  So the exported targets
# name gvloop::uv, gvloop::tcl, gvloop::tk and X11::X11 instead of the paths
# found where gvloop was built.
#
#   gvloop_find_uv()      gvloop::uv (libuv >= 1.30); sets gvloop_uv_FOUND
#   gvloop_find_tcl()     gvloop::tcl (8.6); sets gvloop_tcl_FOUND and
#                         GVLOOP_TCL_INCLUDE_DIR
#   gvloop_find_tcltk()   gvloop::tcl, gvloop::tk (8.6) and X11::X11; sets
#                         gvloop_tcltk_FOUND and GVLOOP_TK_LIBRARY
include_guard(GLOBAL)

# gvloop::<name> from pkg-config's module pc (for hints), the header and the
# library names; ARGN goes to find_path.  Sets gvloop_<name>_FOUND and the
# cache variables GVLOOP_<NAME>_INCLUDE_DIR and GVLOOP_<NAME>_LIBRARY.  A
# macro: gvloop_find_tcltk looks for Tk with Tcl's pkg-config hints.
macro(_gvloop_find_one _n _pc _hdr _libs)
  string(TOUPPER ${_n} _N)
  if(NOT TARGET gvloop::${_n})
    find_package(PkgConfig QUIET)
    if(PKG_CONFIG_FOUND)
      pkg_check_modules(_GVLOOP_${_N} QUIET ${_pc})
    endif()
    find_path(GVLOOP_${_N}_INCLUDE_DIR ${_hdr} HINTS ${_GVLOOP_${_N}_INCLUDE_DIRS} ${ARGN})
    find_library(GVLOOP_${_N}_LIBRARY NAMES ${_libs} HINTS ${_GVLOOP_${_N}_LIBRARY_DIRS})
    if(GVLOOP_${_N}_INCLUDE_DIR AND GVLOOP_${_N}_LIBRARY)
      add_library(gvloop::${_n} UNKNOWN IMPORTED)
      set_target_properties(gvloop::${_n} PROPERTIES
        IMPORTED_LOCATION "${GVLOOP_${_N}_LIBRARY}"
        INTERFACE_INCLUDE_DIRECTORIES "${GVLOOP_${_N}_INCLUDE_DIR}")
    endif()
  endif()
  if(TARGET gvloop::${_n})
    set(gvloop_${_n}_FOUND TRUE)
  else()
    set(gvloop_${_n}_FOUND FALSE)
  endif()
endmacro()

macro(gvloop_find_uv)
  _gvloop_find_one(uv "libuv>=1.30" uv.h uv)
endmacro()

macro(gvloop_find_tcl)
  _gvloop_find_one(tcl tcl8.6 tcl.h "tcl8.6;tcl" /usr/include/tcl8.6 PATH_SUFFIXES tcl8.6)
endmacro()

macro(gvloop_find_tcltk)
  gvloop_find_tcl()
  if(NOT TARGET gvloop::tk OR NOT TARGET X11::X11)
    find_library(GVLOOP_TK_LIBRARY NAMES tk8.6 tk HINTS ${_GVLOOP_TCL_LIBRARY_DIRS})
    find_package(X11 QUIET)
    if(gvloop_tcl_FOUND AND GVLOOP_TK_LIBRARY AND TARGET X11::X11 AND NOT TARGET gvloop::tk)
      add_library(gvloop::tk UNKNOWN IMPORTED)
      set_target_properties(gvloop::tk PROPERTIES
        IMPORTED_LOCATION "${GVLOOP_TK_LIBRARY}"
        INTERFACE_LINK_LIBRARIES "gvloop::tcl;X11::X11")
    endif()
  endif()
  if(TARGET gvloop::tcl AND TARGET gvloop::tk AND TARGET X11::X11)
    set(gvloop_tcltk_FOUND TRUE)
  else()
    set(gvloop_tcltk_FOUND FALSE)
  endif()
endmacro()
