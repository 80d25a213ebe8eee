# Per-target settings for rtcosim's own code. Warnings are errors on our
# targets only, never globally, so third-party headers cannot break the build.
function(rtcosim_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic
                         -Wshadow -Wnon-virtual-dtor -Wconversion -Wno-sign-conversion)
  # g++ 12 at -O3 (the Release build type) reports -Wrestrict inside
  # libstdc++'s own operator+(const char*, std::string&&), a false positive
  # (GCC bug 105329) that no rewrite of ordinary string concatenation avoids.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE -Wno-restrict)
  endif()
  if(RTCOSIM_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  rtcosim_line_tables(${target})
endfunction()

if(RTCOSIM_SANITIZE)
  add_compile_options(-fsanitize=${RTCOSIM_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${RTCOSIM_SANITIZE})
endif()

# Line tables only in RelWithDebInfo (-g1; the suites' units have had them
# since they were measured): backtraces, perf and sanitizer reports keep
# file and line, and -g's full debug information took a third of each
# unit's compiler time for no faster or different code (run_command.cpp
# 15.2 s -> 9.6 s of CPU, linear_solver.cpp 20.7 s -> 14.4 s; -g does not
# change code generation, so every output keeps its bits). A Debug build
# keeps everything.
function(rtcosim_line_tables target)
  target_compile_options(${target} PRIVATE $<$<AND:$<COMPILE_LANG_AND_ID:CXX,GNU,Clang>,$<CONFIG:RelWithDebInfo>>:-g1>)
endfunction()

# rtcosim_library(NAME ALIAS SOURCES...) builds one layer's library with the
# repository root as include root, so headers are included as "coupling/x.hpp".
function(rtcosim_library name alias)
  add_library(${name} ${ARGN})
  add_library(rtcosim::${alias} ALIAS ${name})
  target_include_directories(${name} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/rtcosim>)
  target_compile_features(${name} PUBLIC cxx_std_20)
  rtcosim_warnings(${name})
  rtcosim_unity(${name})
endfunction()

# Unity builds of our libraries (RTCOSIM_UNITY): a library's sources are
# compiled in batches of 8 per translation unit, so that the standard and
# yaml-cpp headers that take half of each unit's compiler time are parsed
# once per batch (`rtcosim`'s compiler time 343 s -> 198 s, docs/building.md).
# Names local to a source file must then be unique within their library:
# two files' helpers of the same name fail to compile (a redefinition), and
# overloads of one name are not written (a call could take the other
# file's). No code changes: the same functions are compiled with the same
# flags, and every example's output keeps its bits (scripts/example-outputs.sh).
function(rtcosim_unity target)
  if(RTCOSIM_UNITY)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
  endif()
endfunction()

# The libraries of the real-time path (tasks, coupling, runtime): g++ 12 at
# -O2 vectorises only loops of a known trip count ("very cheap"), and the
# frame program's loops run over counts fixed at set-up. Vectorising
# element-wise arithmetic changes no result (no reassociation, and no
# fused multiply-add: -ffp-contract=off says so even where a -march with FMA
# is added): every example's output stays the same bits, and each kernel's
# those of the block's own functions (docs/frame-program.md). Only these
# three, so that the other layers compile as fast as before.
function(rtcosim_hot_path target)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -fvect-cost-model=dynamic -ffp-contract=off)
  endif()
endfunction()
