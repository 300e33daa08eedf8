# spool::spool links every component that exists and registers every storage
# backend (spool/register_backends.h).
set(umbrella_deps spool::core)
foreach(component s3 gcs records loader checkpoint)
  if(TARGET spool::${component})
    list(APPEND umbrella_deps spool::${component})
  endif()
endforeach()
if(TARGET spool::s3)
  set(SPOOL_HAVE_S3 1)
endif()
if(TARGET spool::gcs)
  set(SPOOL_HAVE_GCS 1)
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/backends.h.in ${PROJECT_BINARY_DIR}/generated/spool/backends_config.h)
spool_add_component(NAME spool DIR spool SOURCES ${PROJECT_SOURCE_DIR}/spool/register_backends.cc
  PUBLIC_DEPS ${umbrella_deps})
install(FILES ${PROJECT_BINARY_DIR}/generated/spool/backends_config.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/spool/spool)
