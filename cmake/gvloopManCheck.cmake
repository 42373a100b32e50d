# SPDX-License-Identifier: MIT
# cmake -DDIR=<man3 dir> -DPAGES="gvl;evloop;tkbridge" -P gvloopManCheck.cmake:
# render each page with man-db, failing on any warning, on a list item run
# into a paragraph, or on a NAME line that is not the page's own summary
# (whatis(1) and apropos(1) read it).
find_program(MAN man)
if(NOT MAN)
  message("man not installed (apt-get install man-db): skipped")
  return()
endif()
foreach(p IN LISTS PAGES)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env MANWIDTH=80 LC_ALL=C.UTF-8
                          ${MAN} --warnings -l ${DIR}/${p}.3
    OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR NOT err STREQUAL "" OR NOT out MATCHES "FUNCTIONS")
    message(FATAL_ERROR "${p}.3: rc=${rc}\n${err}")
  endif()
  # A list item of the header's comments is a bullet of its own, never
  # text run into a paragraph (" - Fair: ..." after a sentence).
  if(out MATCHES "[a-z.:;)] - [A-Z][a-z]+[ :]")
    message(FATAL_ERROR "${p}.3: a list item run into a paragraph: '${CMAKE_MATCH_0}'")
  endif()
  file(STRINGS ${DIR}/${p}.3 name REGEX "^${p} \\\\- ")
  if(NOT name OR name MATCHES "SPDX")
    message(FATAL_ERROR "${p}.3: NAME line is '${name}'")
  endif()
  message("${p}.3 ok: ${name}")
endforeach()
