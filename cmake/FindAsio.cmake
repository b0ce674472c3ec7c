# SPDX-License-Identifier: Apache-2.0
# FindAsio: standalone Asio (header-only; Debian libasio-dev, 1.22 or later). Defines the
# imported target Asio::Asio (its include directory, ASIO_STANDALONE, ASIO_NO_DEPRECATED,
# ASIO_DISABLE_STD_ALIGNED_ALLOC, threads) and Asio_FOUND. ASIO_DISABLE_STD_ALIGNED_ALLOC:
# Asio 1.22 picks std::aligned_alloc only if a standard header came before its own, so
# translation units (the library's, a user's) could compile its handler allocator two
# ways and free with operator delete what aligned_alloc allocated; every user of
# prodsm::asio gets the same choice from here (and from prodsm.pc). A package manager's Asio (vcpkg or Conan: the CMake target
# asio::asio) is used instead when it is found first. Installed with prodsm's package
# config.
if(NOT TARGET Asio::Asio)
  find_package(asio CONFIG QUIET)
endif()
find_package(Threads REQUIRED)
if(TARGET asio::asio AND NOT TARGET Asio::Asio)
  add_library(Asio::Asio INTERFACE IMPORTED)
  set_target_properties(Asio::Asio PROPERTIES INTERFACE_LINK_LIBRARIES "asio::asio;Threads::Threads"
                                              INTERFACE_COMPILE_DEFINITIONS "ASIO_STANDALONE;ASIO_NO_DEPRECATED;ASIO_DISABLE_STD_ALIGNED_ALLOC")
  set(Asio_FOUND TRUE)
  return()
endif()
find_path(Asio_INCLUDE_DIR asio.hpp)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Asio REQUIRED_VARS Asio_INCLUDE_DIR)
if(Asio_FOUND AND NOT TARGET Asio::Asio)
  add_library(Asio::Asio INTERFACE IMPORTED)
  set_target_properties(Asio::Asio PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${Asio_INCLUDE_DIR}"
                                              INTERFACE_COMPILE_DEFINITIONS "ASIO_STANDALONE;ASIO_NO_DEPRECATED;ASIO_DISABLE_STD_ALIGNED_ALLOC"
                                              INTERFACE_LINK_LIBRARIES Threads::Threads)
endif()
mark_as_advanced(Asio_INCLUDE_DIR)
