# SPDX-License-Identifier: MIT
# gvloop_onecpu(TEST COMMAND...): add TEST.onecpu, the same command pinned
# to CPU 0 with taskset, with TEST's timeout and environment and its labels
# plus "onecpu".  One CPU is a host like any other: nothing may spin there.
#   ctest -L onecpu
find_program(GVLOOP_TASKSET taskset)
function(gvloop_onecpu name)
  if(NOT GVLOOP_TASKSET)
    return()
  endif()
  add_test(NAME ${name}.onecpu COMMAND ${GVLOOP_TASKSET} -c 0 ${ARGN})
  get_test_property(${name} LABELS labels)
  get_test_property(${name} TIMEOUT timeout)
  get_test_property(${name} ENVIRONMENT env)
  if(NOT labels)
    set(labels "")
  endif()
  list(APPEND labels onecpu)
  set_tests_properties(${name}.onecpu PROPERTIES LABELS "${labels}")
  if(timeout)
    set_tests_properties(${name}.onecpu PROPERTIES TIMEOUT ${timeout})
  endif()
  if(env)
    set_tests_properties(${name}.onecpu PROPERTIES ENVIRONMENT "${env}")
  endif()
endfunction()
