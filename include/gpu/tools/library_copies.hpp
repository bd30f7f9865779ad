/// @file library_copies.hpp
/// @brief Copies of a shared library on the dynamic loader's search path and in the Python
/// environment's NVIDIA wheels, and the diagnosis check that warns when a version has more than
/// one: the usual cause of "built against one cuDNN, loaded another". Part of the tools
/// component (`cudagap::tools`, namespace `gpu::tools`).
///
/// @code
/// for (const gpu::tools::library_copy& copy : gpu::tools::find_library_copies("libcudnn")) {
///     std::printf("%s\n", copy.describe().c_str()); // path, pip wheel, loaded
/// }
/// @endcode
#pragma once

#include <gpu/tools/diagnose.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpu::tools {

/// @brief One file of a shared library found on the loader's search path.
struct library_copy {
    std::string path{};          ///< where it was found, e.g. `/usr/local/cuda/lib64/libcudnn.so.9`
    std::string resolved_path{}; ///< the file it is after following links
    std::string
        soname_version{}; ///< the version in the file name after `.so.`, e.g. `9` or `9.1.0`
    bool loaded = false;  ///< this process has this file loaded
    /// It lies in a library folder of NVIDIA's pip wheels in the Python environment (python3 on
    /// `PATH`), such as `site-packages/nvidia/cudnn/lib`, which only Python packages load.
    bool from_wheel = false;
    /// The wheel that installed it, from its `.dist-info/RECORD`: its name and version, e.g.
    /// `nvidia-cudnn-cu13 9.13.0.50`; empty outside wheel folders and for a file no RECORD lists.
    std::string wheel{};

    /// @brief The path and where it comes from: `/usr/lib/python3/site-packages/nvidia/cudnn/lib/
    /// libcudnn.so.9 (pip wheel nvidia-cudnn-cu13 9.13.0.50) (loaded)`.
    [[nodiscard]] std::string describe() const;

    /// @brief Copies compare equal field by field.
    friend bool operator==(const library_copy&, const library_copy&) = default;
};

/// @brief The distinct files of the shared library @p library (e.g. `libcudnn`, matching
/// `libcudnn.so` and `libcudnn.so.<version>`, not `libcudnn_ops.so`) on the dynamic loader's
/// search path: `LD_LIBRARY_PATH`, the folders of `/etc/ld.so.conf`, the system library
/// folders, the folders named by `CUDA_HOME`, `CUDA_PATH` and `CUDNN_ROOT`, the folder of the
/// copy this process has loaded, and the `lib` folders of NVIDIA's pip wheels in the Python
/// environment (`python3` on `PATH` is asked where the `nvidia` package is, within 5 seconds;
/// those copies have `from_wheel` set). Links to the same file count once.
[[nodiscard]] std::vector<library_copy> find_library_copies(std::string_view library);

/// @brief The file this process has loaded for @p library (e.g. `libcublas`), if any.
[[nodiscard]] std::optional<std::string> loaded_library_path(std::string_view library);

/// @brief A ready-made check that @p libraries (e.g. `{"libcudnn"}`) have one copy each per
/// major version on the search path: `warning` listing the copies and the one loaded when there
/// are more, with a fix that names @p root_variable (e.g. `CUDNN_ROOT`); `ok` otherwise.
/// What `gpu::tools::diagnose` runs for the CUDA runtime, cuBLAS and cuDNN.
/// @param name the check's name, e.g. `cuDNN copies on the library path`
/// @param libraries the library base names to look for
/// @param root_variable the variable that selects the copy to build against; may be empty
[[nodiscard]] diagnostic check_library_copies(std::string name,
                                              const std::vector<std::string>& libraries,
                                              std::string_view root_variable);

} // namespace gpu::tools

// The names of the library-copy search before it moved into gpu::tools, kept for one release,
// deprecated so that a build says which name to write instead. They are to be removed in the
// release after.
namespace gpu {

/// @deprecated use `gpu::tools::library_copy`
using library_copy [[deprecated("use gpu::tools::library_copy")]] = tools::library_copy;

/// @deprecated use `gpu::tools::find_library_copies`, which takes the same argument
[[deprecated(
    "use gpu::tools::find_library_copies")]] [[nodiscard]] inline std::vector<tools::library_copy>
find_library_copies(std::string_view library)
{
    return tools::find_library_copies(library);
}

/// @deprecated use `gpu::tools::loaded_library_path`, which takes the same argument
[[deprecated(
    "use gpu::tools::loaded_library_path")]] [[nodiscard]] inline std::optional<std::string>
loaded_library_path(std::string_view library)
{
    return tools::loaded_library_path(library);
}

/// @deprecated use `gpu::tools::check_library_copies`, which takes the same arguments
[[deprecated("use gpu::tools::check_library_copies")]] [[nodiscard]] inline tools::diagnostic
check_library_copies(std::string name, const std::vector<std::string>& libraries,
                     std::string_view root_variable)
{
    return tools::check_library_copies(std::move(name), libraries, root_variable);
}

} // namespace gpu
