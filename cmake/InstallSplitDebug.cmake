# Run by `cmake --install` after libprof.so is copied: moves its debug info
# into a separate file and leaves a .gnu_debuglink to it. Idempotent: a
# library without .debug_info (already split, or a Release build) is left
# alone, and a debug file from an earlier install is kept.
if(IS_ABSOLUTE "${LIBPROF_LIBDIR}")
  set(libdir "$ENV{DESTDIR}${LIBPROF_LIBDIR}")
else()
  set(libdir "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}/${LIBPROF_LIBDIR}")
endif()
set(lib "${libdir}/libprof.so")
set(debug "${libdir}/.debug/libprof.so.debug")
if(NOT EXISTS "${lib}" OR NOT LIBPROF_OBJCOPY OR NOT LIBPROF_READELF)
  return()
endif()
execute_process(COMMAND "${LIBPROF_READELF}" -S -W "${lib}" OUTPUT_VARIABLE sections ERROR_QUIET)
string(FIND "${sections}" " .debug_info " at)
if(at EQUAL -1)
  return()
endif()
file(MAKE_DIRECTORY "${libdir}/.debug")
message(STATUS "Splitting debug info: ${debug}")
execute_process(COMMAND "${LIBPROF_OBJCOPY}" --only-keep-debug --compress-debug-sections=zlib "${lib}" "${debug}"
                RESULT_VARIABLE failed)
if(NOT failed)
  # The link stores the debug file's name and CRC; run from its folder so the
  # name alone is recorded.
  execute_process(COMMAND "${LIBPROF_OBJCOPY}" --strip-debug --add-gnu-debuglink=libprof.so.debug "${lib}"
                  WORKING_DIRECTORY "${libdir}/.debug" RESULT_VARIABLE failed)
endif()
if(failed)
  message(FATAL_ERROR "splitting the debug info of ${lib} failed")
endif()
# objcopy writes a new file: the modes install() gave are set again.
file(CHMOD "${lib}" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
file(CHMOD "${debug}" PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
