# Compiler flags shared by every Kiln target, collected on one interface target.
add_library(kiln_options INTERFACE)
target_compile_options(kiln_options INTERFACE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                                              -Wno-missing-field-initializers)
if(KILN_WARNINGS_AS_ERRORS)
  target_compile_options(kiln_options INTERFACE -Werror)
endif()
if(KILN_SANITIZE)
  string(REPLACE ";" "," _kiln_sanitizers "${KILN_SANITIZE}")
  target_compile_options(kiln_options INTERFACE -fsanitize=${_kiln_sanitizers} -fno-omit-frame-pointer
                                                -fno-sanitize-recover=all)
  target_link_options(kiln_options INTERFACE -fsanitize=${_kiln_sanitizers})
endif()
