# shellcheck shell=bash
# Where the CUDA Toolkit that an nvcc belongs to is: the scripts' one answer, so that the quick
# start, gpu-check and its rehearsal agree on it.

# Prints the root folder of the toolkit that the nvcc at $1 belongs to. nvcc itself reports it
# (TOP in a dry run), because the nvcc found on PATH may be a wrapper script or a link in another
# folder, as /usr/local/bin/nvcc is on some images, whose parent folder holds only part of the
# toolkit (a libcudart and no cuBLAS). The folder above nvcc's is the answer when nvcc says none.
toolkit_root_of_nvcc() {
  local nvcc="$1" top
  top="$("$nvcc" -dryrun -c -x cu /dev/null -o /dev/null 2>&1 | sed -n 's/^#\$ TOP=//p' | head -1)"
  if [[ -z "$top" || ! -d "$top" ]]; then
    top="$(dirname "$nvcc")/.."
  fi
  (cd "$top" && pwd)
}
