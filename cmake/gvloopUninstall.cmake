# SPDX-License-Identifier: MIT
# cmake -DMANIFEST=<build>/install_manifest.txt -P gvloopUninstall.cmake
# (the `uninstall` target): remove what the last full `cmake --install` of
# this build tree put in place, as its manifest lists it, under the DESTDIR
# that install used (recorded beside the manifest; a different DESTDIR in
# the environment is refused, so a staged install is never "uninstalled"
# from the live system).  Then gvloop's own folders that are left empty
# (cmake/gvloop, the Tcl package's, the packages' docs) are removed with
# rmdir, which never removes a folder that holds anything; shared folders
# such as lib/pkgconfig stay.  The dynamic linker's cache is refreshed as
# the install refreshed it.
if(NOT EXISTS "${MANIFEST}")
  message(FATAL_ERROR "no ${MANIFEST}: nothing was installed from this build tree")
endif()
set(destdir "")
if(EXISTS "${MANIFEST}.destdir")
  file(READ "${MANIFEST}.destdir" destdir)
endif()
if(DEFINED ENV{DESTDIR} AND NOT "$ENV{DESTDIR}" STREQUAL "${destdir}")
  message(FATAL_ERROR "the last install used DESTDIR='${destdir}', not '$ENV{DESTDIR}'")
endif()
file(STRINGS "${MANIFEST}" files)
set(dirs "")
set(libs OFF)
foreach(rel IN LISTS files)
  set(f "${destdir}${rel}")
  if(EXISTS "${f}" OR IS_SYMLINK "${f}")
    message(STATUS "Removing: ${f}")
    file(REMOVE "${f}")
    if(f MATCHES "/lib[a-z]+\\.so")
      set(libs ON)
    endif()
  endif()
  # gvloop's own folders: the file's folder or the one above it, when one
  # of the two is named after gvloop or one of its packages (cmake/gvloop,
  # tcltk/gvloop0.2.0, doc/libgvl0.2, ocaml/.../gvloop/threads).
  get_filename_component(d1 "${rel}" DIRECTORY)
  get_filename_component(d2 "${d1}" DIRECTORY)
  get_filename_component(b1 "${d1}" NAME)
  get_filename_component(b2 "${d2}" NAME)
  set(ours "^(gvloop|libgvl|libevloop|libtkbridge|libgvloop|tcl-gvloop)")
  if(b2 MATCHES "${ours}")
    list(APPEND dirs "${destdir}${d1}" "${destdir}${d2}")
  elseif(b1 MATCHES "${ours}")
    list(APPEND dirs "${destdir}${d1}")
  endif()
endforeach()
list(REMOVE_DUPLICATES dirs)
list(SORT dirs ORDER DESCENDING)   # deepest first
foreach(d IN LISTS dirs)
  if(IS_DIRECTORY "${d}" AND NOT IS_SYMLINK "${d}")
    execute_process(COMMAND rmdir -- "${d}" RESULT_VARIABLE rc ERROR_QUIET)
    if(rc EQUAL 0)
      message(STATUS "Removing: ${d}/")
    endif()
  endif()
endforeach()
if(libs AND destdir STREQUAL "")
  find_program(ldconfig ldconfig PATHS /sbin /usr/sbin)
  if(ldconfig)
    execute_process(COMMAND "${ldconfig}" OUTPUT_QUIET ERROR_QUIET)
  endif()
endif()
