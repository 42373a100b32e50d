# SPDX-License-Identifier: MIT
# Install helpers shared by the layers' CMakeLists.txt.
#
# Components (CPack turns each into one .deb, see cmake/gvloopCPack.cmake):
#   gvl, evloop, tkbridge   the shared libraries (libgvl0.2, libevloop0.2, libtkbridge0.2)
#   dev                     headers, static libraries, .so links, .pc files,
#                           the CMake package, man(3) pages (libgvloop-dev)
#   tclpkg                  the gvloop Tcl package (tcl-gvloop)
#   shells                  gvwish and gvtclsh (gvloop-shells)
#   ocaml                   the findlib package gvloop (libgvloop-ocaml-dev;
#                           hosts/ocaml/CMakeLists.txt)
#
# Everything is installed relative to the prefix, so `cmake --install build
# --prefix P` gives a working tree at any P: the .pc files find their prefix
# from their own place (${pcfiledir}) and the executables and the Tcl package
# find the libraries through a $ORIGIN-relative RUNPATH.
include_guard(GLOBAL)
include(GNUInstallDirs)

# gvloop_rpath_to_libdir(<target> <install dir of target, relative to prefix>)
# RUNPATH $ORIGIN/<path to the libdir>, unless the libdir is one the
# dynamic linker searches anyway (Debian's /usr/lib/<triplet>: no RUNPATH
# in a distribution package).
function(gvloop_rpath_to_libdir tgt dir)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
    set(libdir "${CMAKE_INSTALL_LIBDIR}")
  else()
    set(libdir "${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}")
  endif()
  if(libdir IN_LIST CMAKE_C_IMPLICIT_LINK_DIRECTORIES)
    return()
  endif()
  if(IS_ABSOLUTE "${dir}" OR IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
    set_target_properties(${tgt} PROPERTIES INSTALL_RPATH "${libdir}")
  else()
    file(RELATIVE_PATH rel "/p/${dir}" "/p/${CMAKE_INSTALL_LIBDIR}")
    if(rel STREQUAL "")
      set_target_properties(${tgt} PROPERTIES INSTALL_RPATH "\$ORIGIN")
    else()
      set_target_properties(${tgt} PROPERTIES INSTALL_RPATH "\$ORIGIN/${rel}")
    endif()
  endif()
endfunction()

# gvloop_install_pc(<name>): configure cmake/<name>.pc.in and install it.
# The template uses @GVLOOP_PC_PREFIX@, @GVLOOP_PC_LIBDIR@ and
# @GVLOOP_PC_INCLUDEDIR@ (plus any variable of the caller).  The prefix is
# ${pcfiledir}/../.. (relocatable), except for the system prefix /usr: there
# the paths are written out, as Debian's own .pc files do, so that pkg-config
# recognises /usr/include as a system directory and drops it from --cflags
# (an explicit -I/usr/include breaks #include_next in C++).
function(gvloop_install_pc name)
  set(pcdir "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
  if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}"
     OR CMAKE_INSTALL_PREFIX STREQUAL "/usr")
    set(GVLOOP_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
    set(GVLOOP_PC_LIBDIR "${CMAKE_INSTALL_FULL_LIBDIR}")
    set(GVLOOP_PC_INCLUDEDIR "${CMAKE_INSTALL_FULL_INCLUDEDIR}")
  else()
    file(RELATIVE_PATH up "/p/${pcdir}" "/p")
    string(REGEX REPLACE "/$" "" up "${up}")
    set(GVLOOP_PC_PREFIX "\${pcfiledir}/${up}")
    set(GVLOOP_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
    set(GVLOOP_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
  endif()
  configure_file("${PROJECT_SOURCE_DIR}/cmake/${name}.pc.in"
                 "${CMAKE_CURRENT_BINARY_DIR}/${name}.pc" @ONLY)
  install(FILES "${CMAKE_CURRENT_BINARY_DIR}/${name}.pc" DESTINATION "${pcdir}"
          COMPONENT dev)
endfunction()

# gvloop_install_library(<component> <shared target> <static target> <headers...>)
# The shared library finds the libraries it needs (libevloop needs libgvl)
# beside itself: a program linked --as-needed records only the one it
# calls, so its own RUNPATH is not searched for the others.
function(gvloop_install_library comp shared static)
  gvloop_rpath_to_libdir(${shared} ${CMAKE_INSTALL_LIBDIR})
  install(TARGETS ${shared} ${static} EXPORT gvloop-${comp}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT ${comp}
            NAMELINK_COMPONENT dev
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
  install(FILES ${ARGN} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)
  install(EXPORT gvloop-${comp} FILE gvloop-${comp}-targets.cmake
    NAMESPACE gvloop:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/gvloop
    COMPONENT dev)
  set_property(GLOBAL APPEND PROPERTY GVLOOP_INSTALLED_COMPONENTS ${comp})
endfunction()

# gvloop_install_ldconfig(): once the shared libraries are installed at the
# prefix this tree was configured for, straight onto the system (no
# DESTDIR, as `sudo cmake --install build` does), refresh the dynamic
# linker's cache, as root only, so that programs find them in
# /usr/local/lib at once, as a distribution package's trigger does.  A
# staged or relocated install (DESTDIR, --prefix elsewhere, CPack) or one
# by another user leaves the cache alone.  Each library component asks;
# the first in an install runs it, after its files are in place.  A full
# install also records its DESTDIR beside install_manifest.txt, for the
# uninstall target (cmake/gvloopUninstall.cmake).
function(gvloop_install_ldconfig)
  # Three lines: DESTDIR as given, made absolute against the directory the
  # install ran in (a relative one is, for the install), and the prefix.
  install(CODE "execute_process(COMMAND pwd OUTPUT_VARIABLE gvloop_cwd OUTPUT_STRIP_TRAILING_WHITESPACE)
  set(gvloop_dd \"\")
  if(NOT \"\$ENV{DESTDIR}\" STREQUAL \"\")
    get_filename_component(gvloop_dd \"\$ENV{DESTDIR}\" ABSOLUTE BASE_DIR \"\${gvloop_cwd}\")
  endif()
  file(WRITE \"${PROJECT_BINARY_DIR}/install_manifest.txt.destdir\"
       \"given=\$ENV{DESTDIR}\\ndestdir=\${gvloop_dd}\\nprefix=\${CMAKE_INSTALL_PREFIX}\\n\")")
  find_program(GVLOOP_LDCONFIG ldconfig PATHS /sbin /usr/sbin)
  if(NOT GVLOOP_LDCONFIG)
    return()
  endif()
  foreach(comp gvl evloop tkbridge)
    install(CODE "if(NOT gvloop_ldconfig_done AND \"\$ENV{DESTDIR}\" STREQUAL \"\" AND
   \"\${CMAKE_INSTALL_PREFIX}\" STREQUAL \"${CMAKE_INSTALL_PREFIX}\")
  set(gvloop_ldconfig_done ON)
  execute_process(COMMAND id -u OUTPUT_VARIABLE uid OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(uid STREQUAL \"0\")
    execute_process(COMMAND \"${GVLOOP_LDCONFIG}\" OUTPUT_QUIET ERROR_QUIET)
  endif()
endif()" COMPONENT ${comp})
  endforeach()
endfunction()

# gvloop_install_strip_archives(<component>...): an install with --strip
# (CPack's too) strips the shared objects it installs as targets, but not
# static archives, whose debug info names the build's source tree, nor
# OCaml's stub libraries (dll*.so) installed as files: strip those, once
# each, as each component's install puts them in place (call it last).
# Never through a symbolic link: gvloop.labltk's folder links the system
# labltk's files, which belong to another package.
function(gvloop_install_strip_archives)
  if(NOT CMAKE_STRIP)
    return()
  endif()
  foreach(comp IN LISTS ARGN)
    install(CODE "if(CMAKE_INSTALL_DO_STRIP)
  foreach(f IN LISTS CMAKE_INSTALL_MANIFEST_FILES)
    set(p \"\$ENV{DESTDIR}\${f}\")
    list(FIND GVLOOP_STRIPPED \"\${f}\" seen)
    if(IS_SYMLINK \"\${p}\" OR NOT seen EQUAL -1)
      continue()
    endif()
    if(f MATCHES \"\\\\.a$\")
      set(how --strip-debug)
    elseif(f MATCHES \"/dll[^/]*\\\\.so$\")
      set(how --strip-unneeded)
    else()
      continue()
    endif()
    execute_process(COMMAND \"${CMAKE_STRIP}\" \${how} \"\${p}\" RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR \"strip \${how} \${p} failed: \${rc}\")
    endif()
    list(APPEND GVLOOP_STRIPPED \"\${f}\")
  endforeach()
endif()" COMPONENT ${comp})
  endforeach()
endfunction()
