# FindNCCL
# --------
#
# Finds NVIDIA NCCL (the library and nccl.h) and provides the imported target ``NCCL::nccl``.
#
# Where it looks, in order:
#
# 1. ``NCCL_ROOT`` (CMake variable or environment variable): its ``include`` and
#    ``lib``/``lib64`` folders, or the Python wheel layout below it
#    (``<NCCL_ROOT>/nvidia/nccl``, so a site-packages folder works too).
# 2. The CUDA toolkit's folders (``CUDAToolkit_INCLUDE_DIRS`` and its library folder), where
#    NVIDIA's packages of NCCL for a toolkit put it.
# 3. NVIDIA's Python wheel (``pip install nvidia-nccl-cu13``, also what PyTorch ships):
#    ``<site-packages>/nvidia/nccl/{include,lib}``, found in the site-packages of
#    ``python3`` (``CudagapNvidiaWheels.cmake``, installed beside this file; skipped when
#    ``NCCL_ROOT`` is given or ``NCCL_SKIP_PYTHON_WHEEL`` is set).
# 4. The system folders (Debian's ``libnccl-dev`` installs into ``/usr``).
#
# Result variables:
#
# ``NCCL_FOUND``, ``NCCL_INCLUDE_DIR``, ``NCCL_LIBRARY``, ``NCCL_VERSION`` (e.g. 2.28.9),
# ``NCCL_VERSION_MAJOR``, ``NCCL_VERSION_MINOR``, ``NCCL_VERSION_PATCH``, and
# ``NCCL_MINIMUM_VERSION`` (2.14).
#
# An NCCL older than ``NCCL_MINIMUM_VERSION`` is not found, whatever version was asked for, and
# the message says why: cudagap's nccl wrapper rests on non-blocking communicators
# (``ncclConfig_t::blocking``, ``ncclCommFinalize``, ``ncclInProgress``), which came in 2.14.
# ``NCCL_VERSION_SUPPORTED`` says whether the NCCL found is new enough.
#
# The wheel ships only ``libnccl.so.2`` (no unversioned symlink), which is why the versioned
# name is searched too. The same search as FindCUDNN.cmake, on purpose: one rule for where
# NVIDIA's libraries are found.

include(FindPackageHandleStandardArgs)

set(_nccl_hints)
foreach(_root IN ITEMS "${NCCL_ROOT}" "$ENV{NCCL_ROOT}")
  if(_root)
    list(APPEND _nccl_hints "${_root}" "${_root}/nvidia/nccl")
  endif()
endforeach()

# The wheel: <site-packages>/nvidia/nccl of python3's environment (CudagapNvidiaWheels.cmake,
# the one search of NVIDIA's wheels). Skipped when NCCL_ROOT is given.
set(_nccl_wheel_hints)
if(NOT _nccl_hints AND NOT NCCL_SKIP_PYTHON_WHEEL)
  include("${CMAKE_CURRENT_LIST_DIR}/CudagapNvidiaWheels.cmake")
  cudagap_nvidia_wheel_dirs(_nccl_wheel_hints nccl)
endif()

find_path(NCCL_INCLUDE_DIR
  NAMES nccl.h
  HINTS ${_nccl_hints} ${CUDAToolkit_INCLUDE_DIRS} ${_nccl_wheel_hints}
  PATH_SUFFIXES include
  DOC "Folder that holds nccl.h")

# NAMES_PER_DIR: every name in one folder before the next folder, so that the wheel's
# libnccl.so.2 (a hint) wins over an unrelated libnccl.so in a system folder, which would not
# match the header found beside it.
find_library(NCCL_LIBRARY
  NAMES nccl libnccl.so.2
  NAMES_PER_DIR
  HINTS ${_nccl_hints} ${CUDAToolkit_LIBRARY_DIR} ${_nccl_wheel_hints}
  PATH_SUFFIXES lib64 lib
  DOC "The NCCL shared library")

if(NCCL_INCLUDE_DIR AND EXISTS "${NCCL_INCLUDE_DIR}/nccl.h")
  file(STRINGS "${NCCL_INCLUDE_DIR}/nccl.h" _nccl_version_lines
       REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) +[0-9]+")
  foreach(_part IN ITEMS MAJOR MINOR PATCH)
    string(REGEX MATCH "NCCL_${_part} +([0-9]+)" _match "${_nccl_version_lines}")
    set(NCCL_VERSION_${_part} "${CMAKE_MATCH_1}")
  endforeach()
  set(NCCL_VERSION "${NCCL_VERSION_MAJOR}.${NCCL_VERSION_MINOR}.${NCCL_VERSION_PATCH}")
endif()

# The minimum applies to every caller (cudagapConfig.cmake asks for no version): an older nccl.h
# would fail to compile the wrapper (a static_assert in <gpu/nccl/version.hpp> says the same).
set(NCCL_MINIMUM_VERSION 2.14)
set(_nccl_advice
  "set NCCL_ROOT to the folder that holds include/nccl.h and lib/libnccl.so, install NVIDIA's wheel (pip install nvidia-nccl-cu13), or install Debian's libnccl-dev")
set(NCCL_VERSION_SUPPORTED TRUE)
if(NCCL_VERSION AND NCCL_VERSION VERSION_LESS NCCL_MINIMUM_VERSION)
  set(NCCL_VERSION_SUPPORTED FALSE)
  set(_nccl_advice
    "NCCL ${NCCL_VERSION} (${NCCL_INCLUDE_DIR}/nccl.h) is older than ${NCCL_MINIMUM_VERSION}, the oldest cudagap's nccl wrapper supports (non-blocking communicators: ncclConfig_t::blocking, ncclCommFinalize, ncclInProgress): ${_nccl_advice}, with NCCL ${NCCL_MINIMUM_VERSION} or newer")
endif()

find_package_handle_standard_args(NCCL
  REQUIRED_VARS NCCL_LIBRARY NCCL_INCLUDE_DIR NCCL_VERSION_SUPPORTED
  VERSION_VAR NCCL_VERSION
  REASON_FAILURE_MESSAGE "${_nccl_advice}")

if(NCCL_FOUND AND NOT TARGET NCCL::nccl)
  add_library(NCCL::nccl SHARED IMPORTED)
  set_target_properties(NCCL::nccl PROPERTIES
    IMPORTED_LOCATION "${NCCL_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
endif()

mark_as_advanced(NCCL_INCLUDE_DIR NCCL_LIBRARY)
unset(_nccl_hints)
unset(_nccl_wheel_hints)
unset(_nccl_advice)
