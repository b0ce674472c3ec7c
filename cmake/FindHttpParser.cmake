# SPDX-License-Identifier: Apache-2.0
# FindHttpParser: Node's http-parser (Debian libhttp-parser-dev), which has no CMake or
# pkg-config file of its own. Defines the imported target HttpParser::HttpParser and
# HttpParser_FOUND. Installed with prodsm's package config, so a consumer's
# find_package(prodsm) finds it the same way (CMAKE_PREFIX_PATH or HttpParser_ROOT).
find_path(HttpParser_INCLUDE_DIR http_parser.h)
find_library(HttpParser_LIBRARY http_parser)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(HttpParser REQUIRED_VARS HttpParser_LIBRARY HttpParser_INCLUDE_DIR)
if(HttpParser_FOUND AND NOT TARGET HttpParser::HttpParser)
  add_library(HttpParser::HttpParser UNKNOWN IMPORTED)
  set_target_properties(HttpParser::HttpParser PROPERTIES IMPORTED_LOCATION "${HttpParser_LIBRARY}"
                                                          INTERFACE_INCLUDE_DIRECTORIES "${HttpParser_INCLUDE_DIR}")
endif()
mark_as_advanced(HttpParser_INCLUDE_DIR HttpParser_LIBRARY)
