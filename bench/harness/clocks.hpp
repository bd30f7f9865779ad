/// @file clocks.hpp
/// @brief The GPU's clocks and throttle reasons around each case, read through NVML, which is
/// loaded at run time (`dlopen("libnvidia-ml.so.1")`, never linked): the harness builds and runs
/// where the driver, and with it NVML, is absent, and then says that the clocks were not checked.
/// Clocks are only read, never locked or changed (nvbench can lock them; cudagap leaves the
/// machine as it found it).
///
/// A case is flagged when its SM clock fell while it ran (the reading after it more than
/// `clock_fall_tolerance` below the reading before it) or when a throttle reason other than
/// "GPU idle" is active at its end (power cap, thermal or hardware slowdown, ...): its numbers
/// then describe a slower GPU than the one named in the report's header.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gpu::bench {

/// @brief Throttle reason bits, as NVML's `nvmlClocksEventReason*` (`nvmlClocksThrottleReason*`)
/// constants define them.
namespace throttle {
inline constexpr std::uint64_t gpu_idle = 0x1;            ///< nothing runs: clocks drop
inline constexpr std::uint64_t applications_clocks = 0x2; ///< the applications clocks setting
inline constexpr std::uint64_t sw_power_cap = 0x4;        ///< the power limit
inline constexpr std::uint64_t hw_slowdown = 0x8;         ///< hardware slowdown (heat, power)
inline constexpr std::uint64_t sync_boost = 0x10;         ///< held back to boost with others
inline constexpr std::uint64_t sw_thermal = 0x20;         ///< the driver's thermal limit
inline constexpr std::uint64_t hw_thermal = 0x40;         ///< the hardware's thermal limit
inline constexpr std::uint64_t hw_power_brake = 0x80;     ///< an external power brake
inline constexpr std::uint64_t display_clocks = 0x100;    ///< the display clock setting
} // namespace throttle

/// @brief The names of the reasons set in @p mask, e.g. `{"SW power cap", "HW slowdown"}`;
/// an unknown bit is named by its value (`0x200`).
[[nodiscard]] std::vector<std::string> throttle_reason_names(std::uint64_t mask);

/// @brief One reading of the clocks; each part is empty when NVML could not read it.
struct clock_reading {
    std::optional<int> sm_mhz{};                     ///< SM clock now
    std::optional<int> memory_mhz{};                 ///< memory clock now
    std::optional<std::uint64_t> throttle_reasons{}; ///< the active reasons (bits of `throttle`)

    /// @brief Whether anything was read.
    [[nodiscard]] bool any() const noexcept
    {
        return sm_mhz.has_value() || memory_mhz.has_value() || throttle_reasons.has_value();
    }
};

/// @brief How much the SM clock may fall during a case before it is flagged (2%: one or two
/// clock steps, which a boosting GPU takes back and forth without throttling).
inline constexpr double clock_fall_tolerance = 0.02;

/// @brief The clocks before and after one case, and what they say about it.
struct clock_check {
    clock_reading before{};  ///< read as the case began
    clock_reading after{};   ///< read as it ended
    bool clock_fell = false; ///< the SM clock after is below the one before, beyond the tolerance
    /// Reasons other than "GPU idle" active at the end of the case.
    std::vector<std::string> throttled_by{};

    /// @brief Whether the case is flagged: its clock fell or it throttled.
    [[nodiscard]] bool flagged() const noexcept { return clock_fell || !throttled_by.empty(); }

    /// @brief What the report prints: `1980 MHz`, `FLAGGED: SM 1980->1755 MHz`,
    /// `FLAGGED: SW power cap`, `-` when nothing was read.
    [[nodiscard]] std::string summary() const;
};

/// @brief Judges a case by its two readings (see the file's description).
/// @param tolerance the fraction the SM clock may fall unflagged
[[nodiscard]] clock_check check_clocks(const clock_reading& before, const clock_reading& after,
                                       double tolerance = clock_fall_tolerance);

/// @brief NVML, loaded at run time, for one device: its clocks, throttle reasons and the
/// driver's version. A monitor that could not load or initialise NVML, or find the device,
/// reads nothing and says why. Not copyable; NVML is shut down and unloaded with it.
class clock_monitor {
public:
    /// @brief Loads @p library and finds the device at @p pci_bus_id (e.g. `0000:3B:00.0`;
    /// empty: no device, only the driver's version).
    explicit clock_monitor(const std::string& pci_bus_id,
                           const std::string& library = "libnvidia-ml.so.1");
    ~clock_monitor();
    clock_monitor(const clock_monitor&) = delete;
    clock_monitor& operator=(const clock_monitor&) = delete;
    clock_monitor(clock_monitor&&) = delete;
    clock_monitor& operator=(clock_monitor&&) = delete;

    /// @brief Whether the device's clocks can be read.
    [[nodiscard]] bool available() const noexcept;

    /// @brief Why not, e.g. `libnvidia-ml.so.1 could not be loaded (...)`; empty when available.
    [[nodiscard]] const std::string& unavailable_reason() const noexcept;

    /// @brief The driver's own version (e.g. `580.65.06`); empty when NVML is not loaded.
    [[nodiscard]] const std::string& driver_version() const noexcept;

    /// @brief Reads the clocks and throttle reasons now; empty parts where NVML fails.
    [[nodiscard]] clock_reading read() const;

private:
    struct state;
    std::unique_ptr<state> state_;
};

} // namespace gpu::bench
