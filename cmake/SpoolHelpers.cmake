# spool_add_component(NAME <name> SOURCES ... [PUBLIC_DEPS ...] [PRIVATE_DEPS ...])
#
# Defines the library spool_<name>, its alias spool::<name>, its install rules
# and exports it. Public headers are the *.h files of the component's folder
# (found relative to the source root, so they install as include/spool/<dir>/...).
function(spool_add_component)
  cmake_parse_arguments(ARG "" "NAME;DIR" "SOURCES;PUBLIC_DEPS;PRIVATE_DEPS" ${ARGN})
  set(target spool_${ARG_NAME})
  add_library(${target} ${ARG_SOURCES})
  add_library(spool::${ARG_NAME} ALIAS ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${ARG_NAME} OUTPUT_NAME spool_${ARG_NAME})
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>
    $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/generated>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/spool>)
  target_link_libraries(${target} PUBLIC ${ARG_PUBLIC_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  install(TARGETS ${target} EXPORT spoolTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  set(dir ${ARG_DIR})
  if(NOT dir)
    file(RELATIVE_PATH dir ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
  endif()
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/spool/${dir}
    FILES_MATCHING PATTERN "*.h")
endfunction()

# spool_add_test(NAME <name> SOURCES ... LIBS ... [LABELS ...] [FIXTURES ...] [ENV ...])
#
# One GoogleTest executable registered with CTest as a single test (so the
# ctest summary counts suites, and each test binary reports its own cases).
function(spool_add_test)
  cmake_parse_arguments(ARG "" "NAME;TIMEOUT" "SOURCES;LIBS;LABELS;FIXTURES;ENV" ${ARGN})
  add_executable(${ARG_NAME} ${ARG_SOURCES})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gmock GTest::gtest_main)
  add_test(NAME ${ARG_NAME} COMMAND ${ARG_NAME})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 600)
  endif()
  set_tests_properties(${ARG_NAME} PROPERTIES TIMEOUT ${ARG_TIMEOUT} LABELS "${ARG_LABELS}")
  if(ARG_FIXTURES)
    set_tests_properties(${ARG_NAME} PROPERTIES FIXTURES_REQUIRED "${ARG_FIXTURES}")
  endif()
  if(ARG_ENV)
    set_tests_properties(${ARG_NAME} PROPERTIES ENVIRONMENT "${ARG_ENV}")
  endif()
endfunction()
