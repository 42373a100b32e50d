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

macro(gvloop_find_uv)
  if(NOT TARGET gvloop::uv)
    find_package(PkgConfig QUIET)
    if(PKG_CONFIG_FOUND)
      pkg_check_modules(_GVLOOP_UV QUIET libuv>=1.30)
    endif()
    find_path(GVLOOP_UV_INCLUDE_DIR uv.h HINTS ${_GVLOOP_UV_INCLUDE_DIRS})
    find_library(GVLOOP_UV_LIBRARY NAMES uv HINTS ${_GVLOOP_UV_LIBRARY_DIRS})
    if(GVLOOP_UV_INCLUDE_DIR AND GVLOOP_UV_LIBRARY)
      add_library(gvloop::uv UNKNOWN IMPORTED)
      set_target_properties(gvloop::uv PROPERTIES
        IMPORTED_LOCATION "${GVLOOP_UV_LIBRARY}"
        INTERFACE_INCLUDE_DIRECTORIES "${GVLOOP_UV_INCLUDE_DIR}")
    endif()
  endif()
  if(TARGET gvloop::uv)
    set(gvloop_uv_FOUND TRUE)
  else()
    set(gvloop_uv_FOUND FALSE)
  endif()
endmacro()

macro(gvloop_find_tcl)
  if(NOT TARGET gvloop::tcl)
    find_package(PkgConfig QUIET)
    if(PKG_CONFIG_FOUND)
      pkg_check_modules(_GVLOOP_TCL QUIET tcl8.6)
    endif()
    find_path(GVLOOP_TCL_INCLUDE_DIR tcl.h
      HINTS ${_GVLOOP_TCL_INCLUDE_DIRS} /usr/include/tcl8.6 PATH_SUFFIXES tcl8.6)
    find_library(GVLOOP_TCL_LIBRARY NAMES tcl8.6 tcl HINTS ${_GVLOOP_TCL_LIBRARY_DIRS})
    if(GVLOOP_TCL_INCLUDE_DIR AND GVLOOP_TCL_LIBRARY)
      add_library(gvloop::tcl UNKNOWN IMPORTED)
      set_target_properties(gvloop::tcl PROPERTIES
        IMPORTED_LOCATION "${GVLOOP_TCL_LIBRARY}"
        INTERFACE_INCLUDE_DIRECTORIES "${GVLOOP_TCL_INCLUDE_DIR}")
    endif()
  endif()
  if(TARGET gvloop::tcl)
    set(gvloop_tcl_FOUND TRUE)
  else()
    set(gvloop_tcl_FOUND FALSE)
  endif()
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
