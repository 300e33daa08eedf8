# Finds Intel ISA-L (Debian: libisal-dev) and defines ISAL::isal.
find_path(ISAL_INCLUDE_DIR isa-l.h)
find_library(ISAL_LIBRARY isal)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(ISAL DEFAULT_MSG ISAL_LIBRARY ISAL_INCLUDE_DIR)
if(ISAL_FOUND AND NOT TARGET ISAL::isal)
  add_library(ISAL::isal UNKNOWN IMPORTED)
  set_target_properties(ISAL::isal PROPERTIES
    IMPORTED_LOCATION ${ISAL_LIBRARY}
    INTERFACE_INCLUDE_DIRECTORIES ${ISAL_INCLUDE_DIR})
endif()
mark_as_advanced(ISAL_INCLUDE_DIR ISAL_LIBRARY)
