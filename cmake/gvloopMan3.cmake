# SPDX-License-Identifier: MIT
# The man(3) API reference, generated from the public headers by
# scripts/gen-man3.py (python3): gvl(3), gvl_trace(3), evloop(3), tkbridge(3) and one
# `.so` page per call.  Installed with the dev component.  The EXAMPLE
# programs (man/*.example.c) are built and run with the tests, so they keep
# working.
find_package(Python3 COMPONENTS Interpreter QUIET)
if(NOT Python3_Interpreter_FOUND)
  message(STATUS "man(3): not built (python3 not found)")
  return()
endif()
set(_man3_args "")
set(_man3_deps ${PROJECT_SOURCE_DIR}/scripts/gen-man3.py)
# header:page:library
foreach(_p gvl_api/include/gvl.h:gvl:gvl gvl_api/include/gvl_trace.h:gvl_trace:gvl
           evloop/include/evloop.h:evloop:evloop
           tkbridge/include/tkbridge.h:tkbridge:tkbridge)
  string(REPLACE ":" ";" _pl ${_p})
  list(GET _pl 0 _hdr)
  list(GET _pl 1 _page)
  list(GET _pl 2 _lib)
  if(NOT TARGET ${_lib})
    continue()
  endif()
  list(APPEND _man3_args ${PROJECT_SOURCE_DIR}/${_hdr}:${_page}:${PROJECT_SOURCE_DIR}/man/${_page}.example.c:${_lib})
  list(APPEND _man3_deps ${PROJECT_SOURCE_DIR}/${_hdr} ${PROJECT_SOURCE_DIR}/man/${_page}.example.c)
  list(APPEND GVLOOP_MAN3_PAGES ${_page})
  if(GVLOOP_TESTING)
    add_executable(man_example_${_page} ${PROJECT_SOURCE_DIR}/man/${_page}.example.c)
    target_link_libraries(man_example_${_page} PRIVATE ${_lib} Threads::Threads)
    # tkbridge's example opens a window: on a private Xvfb if DISPLAY is
    # unset.  Not under the sanitizers (Tcl/Tk's caches; the tests cover it).
    if(NOT GVLOOP_ASAN AND NOT GVLOOP_TSAN)
      add_test(NAME man.example_${_page}
        COMMAND ${PROJECT_SOURCE_DIR}/tests/tkbridge/run_x.sh $<TARGET_FILE:man_example_${_page}>
        WORKING_DIRECTORY ${PROJECT_BINARY_DIR}/man)
      set_tests_properties(man.example_${_page} PROPERTIES LABELS "install" TIMEOUT 60
        SKIP_RETURN_CODE 77)
    endif()
  endif()
endforeach()
set(_man3_dir ${PROJECT_BINARY_DIR}/man/man3)
add_custom_command(OUTPUT ${_man3_dir}/gvl.3.stamp
  COMMAND ${CMAKE_COMMAND} -E rm -rf ${_man3_dir}
  COMMAND ${CMAKE_COMMAND} -E env GVLOOP_VERSION=${PROJECT_VERSION}
          ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/gen-man3.py ${_man3_dir} ${_man3_args}
  COMMAND ${CMAKE_COMMAND} -E touch ${_man3_dir}/gvl.3.stamp
  DEPENDS ${_man3_deps}
  COMMENT "Generating the man(3) pages from the public headers")
add_custom_target(gvloop_man3 ALL DEPENDS ${_man3_dir}/gvl.3.stamp)
install(DIRECTORY ${_man3_dir}/ DESTINATION ${CMAKE_INSTALL_MANDIR}/man3
        COMPONENT dev FILES_MATCHING PATTERN "*.3")
if(GVLOOP_TESTING)
  # Every page renders without a groff warning.
  add_test(NAME man.pages COMMAND ${CMAKE_COMMAND} -DDIR=${_man3_dir}
    "-DPAGES=${GVLOOP_MAN3_PAGES}" -P ${PROJECT_SOURCE_DIR}/cmake/gvloopManCheck.cmake)
  set_tests_properties(man.pages PROPERTIES LABELS "install" TIMEOUT 60)
endif()
