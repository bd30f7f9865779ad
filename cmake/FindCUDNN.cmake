# FindCUDNN
# ---------
#
# Finds NVIDIA cuDNN (the library and cudnn.h) and provides the imported target
# ``CUDNN::cudnn``.
#
# Where it looks, in order:
#
# 1. ``CUDNN_ROOT`` (CMake variable or environment variable): its ``include`` and
#    ``lib``/``lib64`` folders, or the Python wheel layout below it
#    (``<CUDNN_ROOT>/nvidia/cudnn``, so a site-packages folder works too).
# 2. The CUDA toolkit's folders (``CUDAToolkit_INCLUDE_DIRS`` and its library folder), where
#    NVIDIA's tarball and the toolkit's packages put it.
# 3. NVIDIA's Python wheel (``pip install nvidia-cudnn-cu13``, also what PyTorch ships):
#    ``<site-packages>/nvidia/cudnn/{include,lib}``, found in the site-packages of
#    ``python3`` (``CudagapNvidiaWheels.cmake``, installed beside this file; skipped when
#    ``CUDNN_ROOT`` is given or ``CUDNN_SKIP_PYTHON_WHEEL`` is set).
# 4. The system folders (Debian's ``libcudnn9-dev-cuda-13`` installs into ``/usr``).
#
# Result variables:
#
# ``CUDNN_FOUND``, ``CUDNN_INCLUDE_DIR``, ``CUDNN_LIBRARY``, ``CUDNN_VERSION`` (e.g. 9.19.0),
# ``CUDNN_VERSION_MAJOR``, ``CUDNN_VERSION_MINOR``, ``CUDNN_VERSION_PATCH``.
#
# The wheel ships only ``libcudnn.so.9`` (no unversioned symlink), which is why versioned
# names are searched too.

include(FindPackageHandleStandardArgs)

set(_cudnn_hints)
foreach(_root IN ITEMS "${CUDNN_ROOT}" "$ENV{CUDNN_ROOT}")
  if(_root)
    list(APPEND _cudnn_hints "${_root}" "${_root}/nvidia/cudnn")
  endif()
endforeach()

# The wheel: <site-packages>/nvidia/cudnn of python3's environment (CudagapNvidiaWheels.cmake,
# the one search of NVIDIA's wheels). Skipped when CUDNN_ROOT is given.
set(_cudnn_wheel_hints)
if(NOT _cudnn_hints AND NOT CUDNN_SKIP_PYTHON_WHEEL)
  include("${CMAKE_CURRENT_LIST_DIR}/CudagapNvidiaWheels.cmake")
  cudagap_nvidia_wheel_dirs(_cudnn_wheel_hints cudnn)
endif()

find_path(CUDNN_INCLUDE_DIR
  NAMES cudnn_version.h
  HINTS ${_cudnn_hints} ${CUDAToolkit_INCLUDE_DIRS} ${_cudnn_wheel_hints}
  PATH_SUFFIXES include
  DOC "Folder that holds cudnn.h and cudnn_version.h")

# NAMES_PER_DIR: every name in one folder before the next folder, so that the wheel's
# libcudnn.so.9 (a hint) wins over an unrelated libcudnn.so in a system folder, which would not
# match the headers found beside it.
find_library(CUDNN_LIBRARY
  NAMES cudnn libcudnn.so.9 libcudnn.so.8
  NAMES_PER_DIR
  HINTS ${_cudnn_hints} ${CUDAToolkit_LIBRARY_DIR} ${_cudnn_wheel_hints}
  PATH_SUFFIXES lib64 lib lib/x64
  DOC "The cuDNN shared library")

if(CUDNN_INCLUDE_DIR AND EXISTS "${CUDNN_INCLUDE_DIR}/cudnn_version.h")
  file(STRINGS "${CUDNN_INCLUDE_DIR}/cudnn_version.h" _cudnn_version_lines
       REGEX "^#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) +[0-9]+")
  foreach(_part IN ITEMS MAJOR MINOR PATCHLEVEL)
    string(REGEX MATCH "CUDNN_${_part} +([0-9]+)" _match "${_cudnn_version_lines}")
    set(_cudnn_${_part} "${CMAKE_MATCH_1}")
  endforeach()
  set(CUDNN_VERSION_MAJOR "${_cudnn_MAJOR}")
  set(CUDNN_VERSION_MINOR "${_cudnn_MINOR}")
  set(CUDNN_VERSION_PATCH "${_cudnn_PATCHLEVEL}")
  set(CUDNN_VERSION "${CUDNN_VERSION_MAJOR}.${CUDNN_VERSION_MINOR}.${CUDNN_VERSION_PATCH}")
endif()

find_package_handle_standard_args(CUDNN
  REQUIRED_VARS CUDNN_LIBRARY CUDNN_INCLUDE_DIR
  VERSION_VAR CUDNN_VERSION
  REASON_FAILURE_MESSAGE
    "set CUDNN_ROOT to the folder that holds include/cudnn.h and lib/libcudnn.so, install NVIDIA's wheel (pip install nvidia-cudnn-cu13), or install Debian's libcudnn9-dev-cuda-13")

if(CUDNN_FOUND AND NOT TARGET CUDNN::cudnn)
  add_library(CUDNN::cudnn SHARED IMPORTED)
  set_target_properties(CUDNN::cudnn PROPERTIES
    IMPORTED_LOCATION "${CUDNN_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${CUDNN_INCLUDE_DIR}")
endif()

mark_as_advanced(CUDNN_INCLUDE_DIR CUDNN_LIBRARY)
unset(_cudnn_hints)
unset(_cudnn_wheel_hints)
