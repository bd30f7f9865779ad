// Private to cudagap_tools: the library folders of NVIDIA's pip wheels in the Python environment
// that `python3` on PATH runs (nvidia/cudnn/lib, nvidia/cu13/lib, ...), and which wheel installed
// each file there. That is where a PyTorch user's second cuDNN, cuBLAS or NCCL usually is: the
// loader never looks there, PyTorch loads them by path. Not installed.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace gpu::tools::detail {

/// The NVIDIA wheel folders of one Python environment.
struct wheel_folders {
    /// The library folders, as Python names them (`.../site-packages/nvidia/cudnn/lib`).
    std::vector<std::string> folders;
    /// The wheel of each file in them (canonical path -> `nvidia-cudnn-cu13 9.13.0.50`), from the
    /// `RECORD` of each `nvidia_*.dist-info`; a file no RECORD lists is not in it.
    std::map<std::string, std::string> wheel_of;
};

/// Asks `python3` (found in the ':'-separated @p search_path, run with a 5-second limit) where
/// the `nvidia` namespace package is, and lists the `lib` and `lib64` folders under it and the
/// wheels their files came from. Empty when there is no python3, no NVIDIA wheel, or python3
/// fails or hangs. Asked once per python3 and environment in a process.
[[nodiscard]] wheel_folders python_wheel_folders(const std::string& search_path);

/// The same for the `nvidia` package folders @p nvidia_folders (`.../site-packages/nvidia`), with
/// no python3 run: the part of `python_wheel_folders` that reads the disk.
[[nodiscard]] wheel_folders wheel_folders_in(const std::vector<std::string>& nvidia_folders);

} // namespace gpu::tools::detail
