# spool_add_component(NAME <name> SOURCES ... [PUBLIC_HEADERS ...]
#                     [PUBLIC_DEPS ...] [PRIVATE_DEPS ...])
#
# Defines the library spool_<name>, its alias spool::<name>, its install rules
# and exports it. Sources and consumers alike include its headers by their path
# from the source root, as <spool/<component>/<header>.h>. Only the headers
# listed in PUBLIC_HEADERS (paths relative to the component's folder) are
# installed; the others are internal to the component. tests/headers checks
# that each installed header compiles alone and pulls in no curl, OpenSSL or
# libxml2 header.
function(spool_add_component)
  cmake_parse_arguments(ARG "" "NAME" "SOURCES;PUBLIC_HEADERS;PUBLIC_DEPS;PRIVATE_DEPS" ${ARGN})
  set(target spool_${ARG_NAME})
  add_library(${target} ${ARG_SOURCES})
  add_library(spool::${ARG_NAME} ALIAS ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${ARG_NAME} OUTPUT_NAME spool_${ARG_NAME})
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>
    $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/generated>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_link_libraries(${target} PUBLIC ${ARG_PUBLIC_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  target_compile_options(${target} PRIVATE ${SPOOL_EXTRA_WARNINGS})
  install(TARGETS ${target} EXPORT spoolTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  file(RELATIVE_PATH dir ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
  foreach(header ${ARG_PUBLIC_HEADERS})
    get_filename_component(subdir ${header} DIRECTORY)
    install(FILES ${CMAKE_CURRENT_SOURCE_DIR}/${header}
      DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/${dir}/${subdir})
    set_property(GLOBAL APPEND PROPERTY SPOOL_PUBLIC_HEADERS ${dir}/${header})
  endforeach()
endfunction()

# spool_add_protos(TARGET <target> PROTOS <file.proto> ... [INSTALL])
#
# Compiles .proto files of the current folder into the target, the one way
# every component does it: protoc runs from the source root, so the generated
# headers sit at generated/spool/<component>/<name>.pb.h and are included as
# "spool/<component>/<name>.pb.h", and imports between our protos name the
# same path. INSTALL installs the .proto and .pb.h beside the public headers
# (for protos a public header exposes); otherwise they stay private.
function(spool_add_protos)
  cmake_parse_arguments(ARG "INSTALL" "TARGET" "PROTOS" ${ARGN})
  file(RELATIVE_PATH dir ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
  set(generated_sources)
  foreach(proto ${ARG_PROTOS})
    get_filename_component(name ${proto} NAME_WE)
    get_filename_component(subdir ${proto} DIRECTORY)
    if(subdir)
      set(rel ${dir}/${subdir}/${name})
    else()
      set(rel ${dir}/${name})
    endif()
    set(out ${PROJECT_BINARY_DIR}/generated/${rel}.pb)
    add_custom_command(
      OUTPUT ${out}.cc ${out}.h
      COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/generated
      COMMAND protobuf::protoc --proto_path=${PROJECT_SOURCE_DIR} --proto_path=${Protobuf_INCLUDE_DIRS}
              --cpp_out=${PROJECT_BINARY_DIR}/generated ${rel}.proto
      DEPENDS ${PROJECT_SOURCE_DIR}/${rel}.proto protobuf::protoc
      COMMENT "protoc ${rel}.proto"
      VERBATIM)
    list(APPEND generated_sources ${out}.cc)
    if(ARG_INSTALL)
      get_filename_component(install_dir ${rel} DIRECTORY)
      install(FILES ${out}.h ${PROJECT_SOURCE_DIR}/${rel}.proto
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/${install_dir})
    endif()
  endforeach()
  # Generated code is not ours to keep warning-free.
  set_source_files_properties(${generated_sources} PROPERTIES COMPILE_OPTIONS "-w")
  target_sources(${ARG_TARGET} PRIVATE ${generated_sources})
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
