# The Torch CMake package, and how code built against it must be compiled. Used by the
# smem_ops build (CMakeLists.txt) and by the installed smem_opsConfig.cmake, so a downstream
# project finds the same torch the library was built against.
#
# In:  SMEM_OPS_TORCH_DIR (optional): the Torch_DIR to try first.
# Out: the Torch package (target `torch`, TORCH_LIBRARIES), SMEM_OPS_CXX_STANDARD,
#      SMEM_OPS_CXX11_ABI, and smem_ops_torch_flags(<target>).

if(NOT TARGET torch)
  find_package(Torch QUIET HINTS ${SMEM_OPS_TORCH_DIR})
  if(NOT Torch_FOUND)
    # Not on CMAKE_PREFIX_PATH: ask the python3 on PATH where its torch keeps its CMake package
    # (configure time only; nothing built here depends on Python).
    find_program(SMEM_OPS_PYTHON NAMES python3 python)
    if(SMEM_OPS_PYTHON)
      execute_process(
        COMMAND "${SMEM_OPS_PYTHON}" -c "import torch.utils; print(torch.utils.cmake_prefix_path)"
        OUTPUT_VARIABLE _smem_torch_prefix OUTPUT_STRIP_TRAILING_WHITESPACE
        RESULT_VARIABLE _smem_rc ERROR_QUIET)
      if(_smem_rc EQUAL 0)
        message(STATUS "smem_ops: Torch from ${SMEM_OPS_PYTHON}: ${_smem_torch_prefix}")
        list(APPEND CMAKE_PREFIX_PATH "${_smem_torch_prefix}")
      endif()
    endif()
    find_package(Torch REQUIRED)
  endif()
endif()

# The C++ standard torch's headers need (TorchConfig.cmake records it on the torch target:
# 17 up to torch 2.9, 20 after).
get_target_property(SMEM_OPS_CXX_STANDARD torch CXX_STANDARD)
if(NOT SMEM_OPS_CXX_STANDARD)
  set(SMEM_OPS_CXX_STANDARD 17)
endif()

# The libstdc++ ABI torch was built with. Older TorchConfig.cmake put it in TORCH_CXX_FLAGS
# (and on the torch target); newer ones say nothing, so read it off libc10's symbols.
set(SMEM_OPS_CXX11_ABI "")
if(CMAKE_SYSTEM_NAME STREQUAL "Linux")
  if(TORCH_CXX_FLAGS MATCHES "_GLIBCXX_USE_CXX11_ABI=([01])")
    set(SMEM_OPS_CXX11_ABI ${CMAKE_MATCH_1})
  else()
    find_library(SMEM_OPS_C10_LIBRARY c10 HINTS "${TORCH_INSTALL_PREFIX}/lib" NO_DEFAULT_PATH)
    if(SMEM_OPS_C10_LIBRARY)
      file(STRINGS "${SMEM_OPS_C10_LIBRARY}" _smem_cxx11 REGEX "__cxx11" LIMIT_COUNT 1)
      if(_smem_cxx11)
        set(SMEM_OPS_CXX11_ABI 1)
      else()
        set(SMEM_OPS_CXX11_ABI 0)
      endif()
    endif()
  endif()
endif()

# What every target that includes torch headers needs: torch's standard and ABI, handed on by
# the exported smem_ops::smem_ops to the programs that link it (INTERFACE). The target itself
# gets the standard as a flag per language: as a compile feature or CXX_STANDARD it would set
# its CUDA sources' dialect too, and CMake before 3.26 knows no C++20 dialect for nvcc.
function(smem_ops_torch_flags target)
  target_compile_features(${target} INTERFACE cxx_std_${SMEM_OPS_CXX_STANDARD})
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX,CUDA>:-std=c++${SMEM_OPS_CXX_STANDARD}>)
  if(NOT SMEM_OPS_CXX11_ABI STREQUAL "")
    target_compile_definitions(${target} PUBLIC _GLIBCXX_USE_CXX11_ABI=${SMEM_OPS_CXX11_ABI})
  endif()
endfunction()
