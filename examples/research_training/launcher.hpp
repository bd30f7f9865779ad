// cudagap-train --gpus N: the launcher that starts one process per GPU (torchrun's job, for one
// host), and what each of those processes, a rank, learns from it through its environment.
// POSIX only; no CUDA, no NCCL (the ranks use NCCL, the launcher does not).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace train {

/// The environment variables through which the launcher tells a process that it is a rank
/// (torchrun's RANK, WORLD_SIZE, LOCAL_RANK and rendezvous, reduced to one host and a file).
inline constexpr const char* rank_variable = "CUDAGAP_TRAIN_RANK";
inline constexpr const char* size_variable = "CUDAGAP_TRAIN_WORLD_SIZE";
inline constexpr const char* gpu_variable = "CUDAGAP_TRAIN_GPU";
inline constexpr const char* bootstrap_variable = "CUDAGAP_TRAIN_BOOTSTRAP";

/// What a rank knows of its job.
struct rank_info {
    int rank = 0;                    ///< in [0, size)
    int size = 1;                    ///< the number of ranks
    int gpu = 0;                     ///< its CUDA device (ordinal among the visible ones)
    std::filesystem::path bootstrap; ///< where rank 0 writes NCCL's unique id, the others read it
};

/// This process's rank when the launcher started it (CUDAGAP_TRAIN_RANK is set), else nothing.
/// Throws std::invalid_argument naming the variable and its value when one of the four is
/// missing or out of range.
[[nodiscard]] std::optional<rank_info> rank_from_environment();

/// Starts `ranks` processes of @p command (its argv, argv[0] included; the program executed is
/// @p executable, or argv[0] when that is empty: an absolute path either way), rank r with the four variables above (GPU r; the
/// bootstrap file in a new folder of this launch, removed at the end), rank 0's stdout this
/// process's and the others' /dev/null (their stderr stays), and waits for every one:
/// - a rank that fails (a status other than 0 and 130, or killed by any signal, SIGINT
///   included) makes the launcher stop the others (2 s to end by themselves, then SIGTERM, then
///   SIGKILL 10 s later) and return that status, 128 + the signal's number for a signal, as a
///   shell says;
/// - a rank that exits 130 (Ctrl-C's agreed status) is passed on as SIGINT, and the others get
///   the same 2 s to follow before SIGTERM; a later failure of another rank replaces the 130
///   (not one stopped by that deadline's own signals);
/// - SIGINT, SIGTERM or SIGHUP sent to the launcher is passed on to every rank (SIGHUP not when
///   the launcher's parent ignored it, as nohup does: the ranks then ignore it too); a second
///   one kills them (SIGKILL);
/// - SIGCHLD has its default disposition meanwhile (inherited ignored, no rank could be waited
///   for); the launcher's dispositions are restored at the end.
/// Returns 0 when every rank exited 0, else the first failure's status (130 when there was none
/// but Ctrl-C). Each rank dies with the
/// launcher (PR_SET_PDEATHSIG), so none outlives a launcher that was killed.
/// Throws std::invalid_argument for an empty @p command or @p ranks below 1;
/// std::system_error when the folder or a process cannot be made (the ranks started so far are
/// killed first).
[[nodiscard]] int launch(const std::vector<std::string>& command, int ranks,
                         const std::string& executable = {});

} // namespace train
