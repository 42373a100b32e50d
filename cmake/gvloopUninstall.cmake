# SPDX-License-Identifier: MIT
# cmake -DMANIFEST=<build>/install_manifest.txt -P gvloopUninstall.cmake
# (the `uninstall` target): remove what the last `cmake --install` of this
# build tree installed, as its manifest lists it (under DESTDIR if set, as
# the install was), then the folders of gvloop's own that are left empty
# (cmake/gvloop, the Tcl package's, the docs'); shared folders such as
# lib/pkgconfig stay.  The dynamic linker's cache is refreshed as the
# install refreshed it.
if(NOT EXISTS "${MANIFEST}")
  message(FATAL_ERROR "no ${MANIFEST}: nothing was installed from this build tree")
endif()
file(STRINGS "${MANIFEST}" files)
set(dirs "")
set(libs OFF)
foreach(f IN LISTS files)
  set(f "$ENV{DESTDIR}${f}")
  if(EXISTS "${f}" OR IS_SYMLINK "${f}")
    message(STATUS "Removing: ${f}")
    file(REMOVE "${f}")
    if(f MATCHES "/lib[a-z]+\\.so")
      set(libs ON)
    endif()
  endif()
  # gvloop's own folders: the file's folder or the one above it, when one
  # of the two is named gvloop* (cmake/gvloop, tcltk/gvloop0.1,
  # doc/gvloop, ocaml/.../gvloop/threads); never DESTDIR's own path.
  string(LENGTH "$ENV{DESTDIR}" n)
  string(SUBSTRING "${f}" ${n} -1 rel)
  get_filename_component(d1 "${rel}" DIRECTORY)
  get_filename_component(d2 "${d1}" DIRECTORY)
  get_filename_component(b1 "${d1}" NAME)
  get_filename_component(b2 "${d2}" NAME)
  if(b2 MATCHES "^gvloop")
    list(APPEND dirs "$ENV{DESTDIR}${d1}" "$ENV{DESTDIR}${d2}")
  elseif(b1 MATCHES "^gvloop")
    list(APPEND dirs "$ENV{DESTDIR}${d1}")
  endif()
endforeach()
list(REMOVE_DUPLICATES dirs)
list(SORT dirs ORDER DESCENDING)   # deepest first
foreach(d IN LISTS dirs)
  file(GLOB left "${d}/*")
  if(IS_DIRECTORY "${d}" AND NOT left)
    message(STATUS "Removing: ${d}/")
    file(REMOVE_RECURSE "${d}")
  endif()
endforeach()
if(libs AND "$ENV{DESTDIR}" STREQUAL "")
  find_program(ldconfig ldconfig PATHS /sbin /usr/sbin)
  if(ldconfig)
    execute_process(COMMAND "${ldconfig}" OUTPUT_QUIET ERROR_QUIET)
  endif()
endif()
