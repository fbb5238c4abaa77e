# test_isa_symbols: the objects built with AVX2 / AVX-512 flags (core/quant/quant_avx2*.cpp,
# quant_avx512_*.cpp and core/sampling/exp_sum_avx2.cpp, compiled at -O0 by the wb_quant_isa_o0 and
# wb_sampling_isa_o0 targets so that no inline function hides by being inlined) may define no externally visible symbol but their entry points.
#
# Why: an inline function (or template) of external linkage is emitted as a weak symbol in every
# object that uses it, and the linker keeps one of those copies for the whole program. If it keeps
# the copy compiled with -mavx512f, the scalar code calling that function on a CPU without AVX-512
# dies of SIGILL. Such helpers must have internal linkage in these files (util/hd.h's WB_HD is static
# inline, the files' own helpers sit in unnamed namespaces, quant/quant_isa_local.h replaces the
# standard library's inline functions).
#
# Allowed: each file's entry point (handed to quant.cpp, which calls it only on a CPU that has the
# instructions), and DW.ref.__gxx_personality_v0, a data word pointing at the C++ runtime's exception
# personality routine (the same pointer in every object; no code of ours).
# Usage: cmake -DNM=<nm> -DOBJECTS=<a.o;b.o;...> -P check_isa_symbols.cmake
if(NOT NM OR NOT OBJECTS)
  message(FATAL_ERROR "check_isa_symbols: NM and OBJECTS must be set")
endif()
set(allowed "^wb::(avx2_kernels|add_vnni_tiles_evex|avx512_kernels|add_activation_avx2_kernels|add_float_avx2_kernels|add_iq_grid_avx2_kernels|add_packed_avx2_kernels|add_packed_avx512_kernels|add_rows16_avx512_kernels|add_rows8_avx512_kernels|add_repack_avx512_kernels|add_attention_avx512_kernels|add_rows_avx2_kernels|exp_sum_avx2)\\(")
set(bad "")
list(LENGTH OBJECTS n_objects)
if(n_objects LESS 13)
  message(FATAL_ERROR "check_isa_symbols: expected the 13 ISA-specific objects, got ${n_objects}: ${OBJECTS}")
endif()
foreach(obj IN LISTS OBJECTS)
  if(NOT EXISTS "${obj}")
    message(FATAL_ERROR "check_isa_symbols: ${obj} does not exist (build wb_quant_isa_o0)")
  endif()
  execute_process(COMMAND "${NM}" -C --defined-only "${obj}" OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "check_isa_symbols: ${NM} failed on ${obj}")
  endif()
  string(REPLACE "\n" ";" lines "${out}")
  set(entry_points 0)
  foreach(line IN LISTS lines)
    # "<address> <type> <name>": upper-case types are global, V/W/u/i weak, unique or indirect ones
    if(NOT line MATCHES "^[0-9a-fA-F]* ([A-Za-z]) (.*)$")
      continue()
    endif()
    set(type "${CMAKE_MATCH_1}")
    set(name "${CMAKE_MATCH_2}")
    if(NOT type MATCHES "^[A-Zuvwi]$")
      continue()
    endif()
    if(name MATCHES "${allowed}")
      math(EXPR entry_points "${entry_points} + 1")
    elseif(NOT name STREQUAL "DW.ref.__gxx_personality_v0")
      get_filename_component(file "${obj}" NAME)
      string(APPEND bad "  ${file}: ${type} ${name}\n")
    endif()
  endforeach()
  if(entry_points EQUAL 0)
    message(FATAL_ERROR "check_isa_symbols: no entry point found in ${obj} (is nm's output readable?)")
  endif()
endforeach()
if(bad)
  message(FATAL_ERROR "check_isa_symbols: ISA-specific objects export symbols other code could end up calling:\n${bad}")
endif()
message(STATUS "check_isa_symbols: ${n_objects} objects export only their entry points")
