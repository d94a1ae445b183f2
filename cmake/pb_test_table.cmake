# SPDX-License-Identifier: BSD-3-Clause
# The test table as ctest sees it: scripts/pairbench/contract/test_tables.json is the snapshot of
# the executables' `--list-tests --format json` (scripts/gen-test-tables writes it;
# tests/python/test_testtable.py fails when it is stale).  The per-test ctest entries are
# generated from it, so a test added to a C descriptor table is tested without editing a
# CMakeLists.txt: a test is defined once, in one table.
set(PB_TEST_TABLES ${PROJECT_SOURCE_DIR}/scripts/pairbench/contract/test_tables.json)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${PB_TEST_TABLES})
file(READ ${PB_TEST_TABLES} PB_TEST_TABLES_JSON)

# pb_table_get(LAYER TEST KEY OUT): one field of a test's entry (booleans read ON/OFF,
# lists as their JSON text).
function(pb_table_get layer test key out)
  string(JSON n LENGTH "${PB_TEST_TABLES_JSON}" ${layer} tests)
  math(EXPR last "${n} - 1")
  foreach(i RANGE ${last})
    string(JSON name GET "${PB_TEST_TABLES_JSON}" ${layer} tests ${i} name)
    if(name STREQUAL test)
      string(JSON value GET "${PB_TEST_TABLES_JSON}" ${layer} tests ${i} ${key})
      set(${out} "${value}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  message(FATAL_ERROR "${PB_TEST_TABLES}: no ${layer} test '${test}'")
endfunction()

# pb_table_tests(LAYER OUT [KEY VALUE]): the names of LAYER's tests in table order; with
# KEY VALUE only those whose KEY is VALUE (a boolean: ON/OFF) or, for a list, contains it.
function(pb_table_tests layer out)
  string(JSON n LENGTH "${PB_TEST_TABLES_JSON}" ${layer} tests)
  math(EXPR last "${n} - 1")
  set(names)
  foreach(i RANGE ${last})
    string(JSON name GET "${PB_TEST_TABLES_JSON}" ${layer} tests ${i} name)
    if(ARGC EQUAL 4)
      string(JSON type TYPE "${PB_TEST_TABLES_JSON}" ${layer} tests ${i} ${ARGV2})
      string(JSON value GET "${PB_TEST_TABLES_JSON}" ${layer} tests ${i} ${ARGV2})
      if(type STREQUAL "ARRAY")
        string(FIND "${value}" "\"${ARGV3}\"" at)
        if(at EQUAL -1)
          continue()
        endif()
      elseif(NOT value STREQUAL ARGV3)
        continue()
      endif()
    elseif(NOT ARGC EQUAL 2)
      message(FATAL_ERROR "pb_table_tests(LAYER OUT [KEY VALUE])")
    endif()
    list(APPEND names ${name})
  endforeach()
  if(NOT names)
    message(FATAL_ERROR "${PB_TEST_TABLES}: no ${layer} test matches ${ARGN}")
  endif()
  set(${out} ${names} PARENT_SCOPE)
endfunction()
