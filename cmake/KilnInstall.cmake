# `cmake --install` puts libkiln, its public headers and a CMake package in the prefix, so that
# `find_package(Kiln)` gives users the target kiln::kiln.
include(CMakePackageConfigHelpers)

install(TARGETS kiln EXPORT KilnTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/kiln DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# oneDNN is a private dependency that no system package provides in this version: its library
# is installed beside libkiln, which finds it there through its run path ($ORIGIN).
if(KILN_WITH_ONEDNN)
  install(FILES $<TARGET_FILE:DNNL::dnnl> DESTINATION ${CMAKE_INSTALL_LIBDIR} RENAME libdnnl.so.3)
  set_target_properties(kiln PROPERTIES INSTALL_RPATH "$ORIGIN")
endif()
install(EXPORT KilnTargets NAMESPACE kiln:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Kiln)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/KilnConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/KilnConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Kiln)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/KilnConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/KilnConfig.cmake ${PROJECT_BINARY_DIR}/KilnConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Kiln)
