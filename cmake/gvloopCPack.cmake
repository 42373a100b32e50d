# SPDX-License-Identifier: MIT
# Debian packages, split as Debian splits a library:  cpack -G DEB  (in the
# build tree; configure with -DCMAKE_INSTALL_PREFIX=/usr for a system
# package).  One package per install component (cmake/gvloopInstall.cmake):
#   libgvl0.2 libevloop0.2 libtkbridge0.2
#                                     the shared libraries, one per SONAME
#                                     (named after it: libgvl.so.0.2 -> libgvl0.2)
#   libgvloop-dev                     headers, static libraries, .pc files,
#                                     the CMake package, man(3) pages
#   tcl-gvloop                        the gvloop Tcl package for tclsh/wish
#   gvloop-shells                     gvwish and gvtclsh
#   libgvloop-ocaml-dev               the findlib packages gvloop.threads and
#                                     gvloop.labltk (hosts/ocaml), when built
# Dependencies on system libraries come from dpkg-shlibdeps; those between
# gvloop's own packages are exact versions, since the libraries are built
# and tested together.
set(CPACK_PACKAGE_NAME gvloop)
set(CPACK_PACKAGE_VENDOR "The gvloop authors")
set(CPACK_PACKAGE_CONTACT "The gvloop authors <gvloop@localhost>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
# No CPACK_PACKAGE_DESCRIPTION_SUMMARY: each package's description below
# starts with its own synopsis line, as Debian's do.
set(_about "gvloop is a fair global VM lock, an event loop outside it and a Tcl/Tk\nbridge for language runtimes with a GVL.")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_GENERATOR DEB)
# Package what was configured (the Tcl package directory and the .pc files
# depend on the prefix): a system package wants -DCMAKE_INSTALL_PREFIX=/usr.
set(CPACK_PACKAGING_INSTALL_PREFIX "${CMAKE_INSTALL_PREFIX}")
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY "=")
# dpkg-shlibdeps must find gvloop's own libraries in the staging tree.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS
    "${PROJECT_BINARY_DIR}/gvl_api;${PROJECT_BINARY_DIR}/evloop;${PROJECT_BINARY_DIR}/tkbridge")

# A Debian revision, as for any packaged upstream release (lintian reads a
# version without one as a native Debian package's).
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(_v "${PROJECT_VERSION}-${CPACK_DEBIAN_PACKAGE_RELEASE}")
set(_gvl libgvl${GVLOOP_SOVERSION})
set(_evl libevloop${GVLOOP_SOVERSION})
set(_tkb libtkbridge${GVLOOP_SOVERSION})
set(CPACK_DEBIAN_GVL_PACKAGE_NAME ${_gvl})
set(CPACK_DEBIAN_EVLOOP_PACKAGE_NAME ${_evl})
set(CPACK_DEBIAN_TKBRIDGE_PACKAGE_NAME ${_tkb})
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libgvloop-dev)
set(CPACK_DEBIAN_TCLPKG_PACKAGE_NAME tcl-gvloop)
set(CPACK_DEBIAN_SHELLS_PACKAGE_NAME gvloop-shells)
set(CPACK_DEBIAN_OCAML_PACKAGE_NAME libgvloop-ocaml-dev)
# The packages of the layers built (-DGVLOOP_BUILD_EVLOOP/TKBRIDGE=OFF, or
# no Tk, leave some out), for tests/install/check_deb.sh; the dev package
# depends on those and on what their headers and static libraries need.
set(_pkgs "${_gvl}")
set(_dev "${_gvl} (= ${_v})")
if(TARGET evloop)
  string(APPEND _pkgs " ${_evl}")
  string(APPEND _dev ", ${_evl} (= ${_v}), libuv1-dev (>= 1.30)")
endif()
if(TARGET tkbridge)
  string(APPEND _pkgs " ${_tkb}")
  string(APPEND _dev ", ${_tkb} (= ${_v}), tcl8.6-dev")
endif()
string(APPEND _pkgs " libgvloop-dev")
if(TARGET gvloop_tcl)
  string(APPEND _pkgs " tcl-gvloop")
endif()
if(TARGET gvwish)
  string(APPEND _pkgs " gvloop-shells")
endif()
file(WRITE ${PROJECT_BINARY_DIR}/deb/packages "${_pkgs}\n")
set(CPACK_DEBIAN_EVLOOP_PACKAGE_DEPENDS "${_gvl} (= ${_v})")
# libtkbridge loads Tk when a bridge starts it (not linked: dpkg-shlibdeps
# cannot see it).
set(CPACK_DEBIAN_TKBRIDGE_PACKAGE_DEPENDS "${_evl} (= ${_v}), ${_gvl} (= ${_v}), libtk8.6 (>= 8.6.0)")
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "${_dev}")
unset(_pkgs)
unset(_dev)
set(CPACK_DEBIAN_TCLPKG_PACKAGE_SECTION interpreters)
set(CPACK_DEBIAN_TCLPKG_PACKAGE_DEPENDS "${_evl} (= ${_v}), ${_gvl} (= ${_v}), tcl8.6")
set(CPACK_DEBIAN_TCLPKG_PACKAGE_SUGGESTS "tk8.6")
set(CPACK_DEBIAN_SHELLS_PACKAGE_SECTION interpreters)
set(CPACK_DEBIAN_SHELLS_PACKAGE_DEPENDS "${_tkb} (= ${_v}), ${_evl} (= ${_v}), ${_gvl} (= ${_v})")
# The runtime libraries refresh the linker cache through dpkg's ldconfig
# trigger, as Debian's libraries do (Policy 8.1.1).
file(WRITE ${PROJECT_BINARY_DIR}/deb/triggers "activate-noawait ldconfig\n")
foreach(_c GVL EVLOOP TKBRIDGE)
  set(CPACK_DEBIAN_${_c}_PACKAGE_CONTROL_EXTRA ${PROJECT_BINARY_DIR}/deb/triggers)
endforeach()
# Self-contained (libgvl is linked in statically); tied to the compiler and
# labltk it was built with (hosts/ocaml).
set(CPACK_DEBIAN_OCAML_PACKAGE_SECTION ocaml)
get_property(_ocaml_deps GLOBAL PROPERTY GVLOOP_OCAML_DEB_DEPENDS)
set(CPACK_DEBIAN_OCAML_PACKAGE_DEPENDS "${_ocaml_deps}")
unset(_ocaml_deps)
set(CPACK_DEBIAN_GVL_DESCRIPTION "gvloop's GVL: a fair global VM lock with priority acquire (libgvl)\n${_about}")
set(CPACK_DEBIAN_EVLOOP_DESCRIPTION "gvloop's event loop: libuv on its own thread, outside the GVL (libevloop)\n${_about}")
set(CPACK_DEBIAN_TKBRIDGE_DESCRIPTION "gvloop's Tcl/Tk bridge: Tk on the evloop's loop thread (libtkbridge)\n${_about}")
set(CPACK_DEBIAN_DEV_DESCRIPTION "gvloop: development files (headers, static libraries, man pages)\nHeaders, static libraries, pkg-config files, the CMake package, man(3)\npages and the gvl-trace converter.\n${_about}")
set(CPACK_DEBIAN_TCLPKG_DESCRIPTION "gvloop Tcl package: gvloop's event loop under stock tclsh and wish\n${_about}")
set(CPACK_DEBIAN_SHELLS_DESCRIPTION "gvwish and gvtclsh: wish and tclsh on gvloop's Tcl/Tk bridge\n${_about}")
set(CPACK_DEBIAN_OCAML_DESCRIPTION "OCaml threads on gvloop's GVL: findlib packages gvloop.threads and gvloop.labltk\n${_about}")
unset(_v)
unset(_about)

# Debian wants each package's licence at /usr/share/doc/<package>/copyright,
# the upstream changelog beside it and a Debian changelog for the revision
# (dated SOURCE_DATE_EPOCH when set, for reproducible packages).
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  string(TIMESTAMP _date "%a, %d %b %Y %H:%M:%S +0000" UTC)
  file(WRITE ${PROJECT_BINARY_DIR}/deb/changelog.Debian
       "gvloop (${PROJECT_VERSION}-${CPACK_DEBIAN_PACKAGE_RELEASE}) unstable; urgency=medium\n\n"
       "  * Packaged from the gvloop ${PROJECT_VERSION} sources by CPack\n"
       "    (cmake/gvloopCPack.cmake).\n\n"
       " -- ${CPACK_PACKAGE_CONTACT}  ${_date}\n")
  unset(_date)
  foreach(_c gvl:gvl:${_gvl} evloop:evloop:${_evl} tkbridge:tkbridge:${_tkb}
             dev:gvl:libgvloop-dev tclpkg:gvloop_tcl:tcl-gvloop shells:gvwish:gvloop-shells
             ocaml:gvloop_ocaml_threads:libgvloop-ocaml-dev)
    string(REPLACE ":" ";" _c ${_c})
    list(GET _c 0 _comp)
    list(GET _c 1 _tgt)
    list(GET _c 2 _pkg)
    if(TARGET ${_tgt})
      install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${_pkg}
              RENAME copyright COMPONENT ${_comp})
      install(FILES ${PROJECT_SOURCE_DIR}/CHANGELOG.md DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${_pkg}
              RENAME changelog COMPONENT ${_comp})
      install(FILES ${PROJECT_BINARY_DIR}/deb/changelog.Debian
              DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${_pkg} COMPONENT ${_comp})
    endif()
  endforeach()
endif()
unset(_gvl)
unset(_evl)
unset(_tkb)
# Binaries ship stripped, as Debian's do (the build type keeps debug info in
# the build tree).
set(CPACK_STRIP_FILES ON)
# Manual pages and changelogs ship compressed (gzip -9n), as Debian's do;
# after the staging install, before the packages are made.
set(CPACK_PRE_BUILD_SCRIPTS ${PROJECT_SOURCE_DIR}/cmake/gvloopCPackGzip.cmake)
include(CPack)
