# Script mode: install spool, then for each public header: compile a file that
# includes only it, and list what it includes to find forbidden headers.
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
execute_process(COMMAND ${CMAKE_COMMAND} --install ${SPOOL_BUILD_DIR} --prefix ${prefix}
  RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "install into ${prefix} failed (${rc})")
endif()

# Every installed header must be one the build declared public, and the other
# way round: an internal header that is installed is a leak.
file(GLOB_RECURSE installed RELATIVE ${prefix}/include ${prefix}/include/spool/*.h)
list(FILTER installed EXCLUDE REGEX "\\.pb\\.h$")
list(SORT installed)
set(declared ${HEADERS})
list(SORT declared)
if(NOT installed STREQUAL declared)
  message(FATAL_ERROR "installed headers differ from the declared public ones:\n"
    "installed: ${installed}\ndeclared:  ${declared}")
endif()

set(failures 0)
foreach(header ${HEADERS})
  string(MAKE_C_IDENTIFIER ${header} stem)
  set(source ${WORK_DIR}/${stem}.cc)
  file(WRITE ${source} "#include <${header}>\n")
  execute_process(COMMAND ${CXX} -std=c++20 -fsyntax-only -I${prefix}/include ${source}
    RESULT_VARIABLE rc ERROR_VARIABLE errors)
  if(NOT rc EQUAL 0)
    message(SEND_ERROR "${header} does not compile alone against the installed tree:\n${errors}")
    math(EXPR failures "${failures} + 1")
    continue()
  endif()
  execute_process(COMMAND ${CXX} -std=c++20 -M -I${prefix}/include ${source}
    OUTPUT_VARIABLE deps RESULT_VARIABLE rc)
  string(REGEX MATCHALL "[^ \\\n]*/(curl|openssl|libxml2?)/[^ \\\n]*" forbidden "${deps}")
  if(forbidden)
    list(GET forbidden 0 first)
    message(SEND_ERROR "${header} pulls in ${first}: curl, OpenSSL and libxml2 stay private to the .cc files")
    math(EXPR failures "${failures} + 1")
  endif()
endforeach()
list(LENGTH HEADERS count)
if(failures GREATER 0)
  message(FATAL_ERROR "${failures} of ${count} public headers failed")
endif()
message(STATUS "${count} public headers compile alone and include no curl, OpenSSL or libxml2")
