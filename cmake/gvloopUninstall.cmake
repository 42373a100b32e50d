# SPDX-License-Identifier: MIT
# cmake -DMANIFEST=<build>/install_manifest.txt -P gvloopUninstall.cmake
# (the `uninstall` target): remove what the last full `cmake --install` of
# this build tree put in place, as its manifest lists it, under the DESTDIR
# that install used (recorded beside the manifest, made absolute; a
# different DESTDIR in the environment is refused, so a staged install is
# never "uninstalled" from the live system; files not found are counted in
# a warning).  Then gvloop's own folders that are left empty (cmake/gvloop,
# the Tcl package's, the packages' docs; never the prefix or a folder above
# it) are removed with rmdir, which never removes a folder that holds
# anything; shared folders such as lib/pkgconfig stay.  The dynamic
# linker's cache is refreshed as the install refreshed it.
if(NOT EXISTS "${MANIFEST}")
  message(FATAL_ERROR "no ${MANIFEST}: nothing was installed from this build tree")
endif()
# The record: DESTDIR as the install was given it, the same made absolute
# (a relative one was taken against the directory the install ran in, and
# this script runs in the build tree), and the prefix.
set(given "")
set(destdir "")
set(prefix "")
if(EXISTS "${MANIFEST}.destdir")
  file(READ "${MANIFEST}.destdir" rec)
  if(NOT rec MATCHES "^given=")   # an older record: the DESTDIR alone
    set(rec "given=${rec}\ndestdir=${rec}\n")
  endif()
  foreach(k given destdir prefix)
    if(rec MATCHES "(^|\n)${k}=([^\n]*)")
      set(${k} "${CMAKE_MATCH_2}")
    endif()
  endforeach()
endif()
if(DEFINED ENV{DESTDIR} AND NOT "$ENV{DESTDIR}" STREQUAL "${given}"
   AND NOT "$ENV{DESTDIR}" STREQUAL "${destdir}")
  message(FATAL_ERROR "the last install used DESTDIR='${given}', not '$ENV{DESTDIR}'")
endif()
# One list element per line.  A path with "[" or "]" (or ";") would join
# or split elements of a CMake list, so paths travel encoded (the prefix
# too, to compare with them) and each is decoded where a file is touched.
function(gvloop_encode var)
  string(REPLACE "[" "<gvloop:lb>" v "${${var}}")
  string(REPLACE "]" "<gvloop:rb>" v "${v}")
  string(REPLACE ";" "<gvloop:sc>" v "${v}")
  set(${var} "${v}" PARENT_SCOPE)
endfunction()
function(gvloop_decode var)
  string(REPLACE "<gvloop:lb>" "[" v "${${var}}")
  string(REPLACE "<gvloop:rb>" "]" v "${v}")
  string(REPLACE "<gvloop:sc>" ";" v "${v}")
  set(${var} "${v}" PARENT_SCOPE)
endfunction()
file(READ "${MANIFEST}" text)
gvloop_encode(text)
gvloop_encode(prefix)
string(REGEX REPLACE "\n+$" "" text "${text}")
string(REPLACE "\n" ";" files "${text}")
set(dirs "")
set(libs OFF)
set(missing 0)
foreach(enc IN LISTS files)
  set(rel "${enc}")
  gvloop_decode(rel)
  set(f "${destdir}${rel}")
  if(EXISTS "${f}" OR IS_SYMLINK "${f}")
    message(STATUS "Removing: ${f}")
    file(REMOVE "${f}")
    if(f MATCHES "/lib[a-z]+\\.so")
      set(libs ON)
    endif()
  else()
    math(EXPR missing "${missing} + 1")
  endif()
  # gvloop's own folders: the file's folder or the one above it, when one
  # of the two is named after gvloop or one of its packages (cmake/gvloop,
  # tcltk/gvloop0.2.0, doc/libgvl0.2, ocaml/.../gvloop/threads), and is
  # not the prefix or a folder above it: a prefix such as /opt/gvloop is
  # the user's.
  get_filename_component(e1 "${enc}" DIRECTORY)
  get_filename_component(e2 "${e1}" DIRECTORY)
  foreach(i 1 2)
    get_filename_component(b "${e${i}}" NAME)
    string(FIND "${prefix}/" "${e${i}}/" at)   # 0: the prefix or above it
    set(ours${i} OFF)
    if(NOT at EQUAL 0 AND b MATCHES "^(gvloop|libgvl|libevloop|libtkbridge|libgvloop|tcl-gvloop)")
      set(ours${i} ON)
    endif()
  endforeach()
  if(ours2)
    list(APPEND dirs "${e1}" "${e2}")
  elseif(ours1)
    list(APPEND dirs "${e1}")
  endif()
endforeach()
list(LENGTH files total)
if(missing GREATER 0)
  message(WARNING "${missing} of the ${total} files the last install put in place "
                  "were not found under '${destdir}' (removed already?)")
endif()
list(REMOVE_DUPLICATES dirs)
list(SORT dirs ORDER DESCENDING)   # deepest first
foreach(d IN LISTS dirs)
  gvloop_decode(d)
  set(d "${destdir}${d}")
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
