# Writes generated/wb_version.h with the version and the git commit. It runs at configure time and
# again on every build (the wb_version target), so --version names the commit actually built even when
# the tree moved on since the last configure; the file is only rewritten when the commit changed.
if(CMAKE_SCRIPT_MODE_FILE)
  # Script mode: called by the wb_version target with WB_SOURCE_DIR, WB_BINARY_DIR, PROJECT_VERSION.
  set(src ${WB_SOURCE_DIR})
  set(bin ${WB_BINARY_DIR})
else()
  set(src ${CMAKE_SOURCE_DIR})
  set(bin ${CMAKE_BINARY_DIR})
endif()
execute_process(
  COMMAND git rev-parse --short=12 HEAD
  WORKING_DIRECTORY ${src}
  OUTPUT_VARIABLE WB_GIT_COMMIT
  OUTPUT_STRIP_TRAILING_WHITESPACE
  ERROR_QUIET)
if(NOT WB_GIT_COMMIT)
  set(WB_GIT_COMMIT "unknown")
endif()
configure_file(${src}/cmake/version.h.in ${bin}/generated/wb_version.h @ONLY)

if(NOT CMAKE_SCRIPT_MODE_FILE)
  add_custom_target(wb_version
    COMMAND ${CMAKE_COMMAND} -DWB_SOURCE_DIR=${CMAKE_SOURCE_DIR} -DWB_BINARY_DIR=${CMAKE_BINARY_DIR}
            -DPROJECT_VERSION=${PROJECT_VERSION} -P ${CMAKE_SOURCE_DIR}/cmake/WbGitVersion.cmake
    BYPRODUCTS ${CMAKE_BINARY_DIR}/generated/wb_version.h
    COMMENT "Recording the git commit")
endif()
