/// @file nvtx.hpp
/// @brief NVTX ranges and marks, so that a Nsight Systems timeline reads like the program:
/// `gpu::nvtx::range` (RAII, in a domain, with a colour) and `gpu::nvtx::mark`.
///
/// @code
/// gpu::nvtx::enable();                                   // or a profile that asks for them
/// {
///     const gpu::nvtx::range step("train step", gpu::nvtx::colours::compute);
///     const gpu::nvtx::range layer([&] { return "fc" + std::to_string(i) + " backward"; });
///     ...
/// }                                                      // both ranges end here
/// @endcode
///
/// **Off means free.** Ranges are off until `enable()`, `apply(profile)` with a profile whose
/// `nvtx_ranges` is set (development, testing) or the environment (`CUDAGAP_NVTX=1`, or a
/// `CUDAGAP_PROFILE` that sets it) turns them on. While off, a range is one relaxed atomic load:
/// no NVTX call, no string; a name given as a lambda is not even called, so build names that
/// cost something (shapes, sizes) in a lambda.
///
/// While on, each thread keeps a stack of its open ranges' names, and the memory ledger records
/// the innermost one with every allocation (`memory_event::range`), so that a memory trace says
/// in which step, layer or call memory was taken. The NVTX calls go through nvtx3 (header-only in
/// the toolkit): with no tool attached (Nsight Systems, or a library named by
/// `NVTX_INJECTION64_PATH`), NVTX itself does nothing.
#pragma once

#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpu {
struct profile;
} // namespace gpu

namespace gpu::nvtx {

/// @brief A range's colour on the timeline, as ARGB; 0 leaves it to the tool.
struct colour {
    std::uint32_t argb = 0; ///< alpha, red, green, blue, 8 bits each

    /// @brief Colours are equal when their values are.
    friend constexpr bool operator==(colour, colour) = default;
};

/// @brief The colours cudagap's own ranges use, by kind of work.
namespace colours {
inline constexpr colour none{};                    ///< the tool's choice
inline constexpr colour compute{0xff2e7d32};       ///< GEMMs, convolutions, layers: green
inline constexpr colour memory{0xff1565c0};        ///< copies, fills, allocations: blue
inline constexpr colour communication{0xffef6c00}; ///< collectives: orange
inline constexpr colour graph{0xff6a1b9a};         ///< graph replays: purple
inline constexpr colour user{0xff546e7a};          ///< a default for the program's own: grey
} // namespace colours

/// @brief An NVTX domain: the group a tool shows ranges under. Create one per program or
/// library and keep it (a `static` is usual); cudagap's own ranges are in `domain::cudagap()`.
/// The NVTX domain is created at the first range while ranges are on. Not copyable.
class domain {
public:
    /// @brief A domain called @p name.
    explicit domain(std::string name) : name_(std::move(name)) {}
    domain(const domain&) = delete;
    domain& operator=(const domain&) = delete;
    /// @brief NVTX keeps domains until the process ends.
    ~domain() = default;

    /// @brief The domain of cudagap's own ranges, `cudagap`.
    [[nodiscard]] static const domain& cudagap();

    /// @brief Its name.
    [[nodiscard]] const std::string& name() const noexcept { return name_; }

    /// @brief The `nvtxDomainHandle_t`, created on first call (thread-safe).
    [[nodiscard]] void* native() const;

private:
    std::string name_;
    mutable std::atomic<void*> handle_{nullptr};
};

namespace detail {
/// @brief Whether ranges are on; read on every range, so a relaxed atomic.
inline std::atomic<bool> ranges_on{false};

/// @brief Pushes a range named @p name in @p where and onto the thread's stack of names.
void push(const domain& where, std::string name, colour shade);
/// @brief Pops the innermost range of @p where and the thread's stack.
void pop(const domain& where) noexcept;
/// @brief Marks an instant named @p name in @p where.
void mark(const domain& where, const std::string& name, colour shade);

/// @brief A callable that builds a name: called only while ranges are on.
template <class Builder>
concept name_builder =
    std::invocable<Builder&> && std::convertible_to<std::invoke_result_t<Builder&>, std::string>;
} // namespace detail

/// @brief Whether ranges and marks are on.
[[nodiscard]] inline bool enabled() noexcept
{
    return detail::ranges_on.load(std::memory_order_relaxed);
}

/// @brief Turns ranges and marks on (or off): on, the memory ledger takes the innermost open
/// range's name for its events (`memory_ledger::set_range_name_source`); off, it takes none.
/// Ranges open when this is called end normally.
void enable(bool on = true);

/// @brief Whether the environment turned ranges on when the library loaded: `CUDAGAP_NVTX`
/// set and not `0`, or (`CUDAGAP_NVTX` unset) a `CUDAGAP_PROFILE` whose profile has
/// `nvtx_ranges` (development, testing).
[[nodiscard]] bool enabled_by_environment() noexcept;

/// @brief Turns ranges on or off as @p settings says (`profile::nvtx_ranges`).
void apply(const profile& settings);

/// @brief The names of the calling thread's open ranges, the innermost last (empty while off).
[[nodiscard]] const std::vector<std::string>& open_ranges() noexcept;

/// @brief The innermost open range of the calling thread; empty when none. What the memory
/// ledger's events record.
[[nodiscard]] std::string_view innermost_range() noexcept;

/// @brief A range from construction to destruction, on the constructing thread, nested in the
/// ranges open there. Ranges must end in reverse order of their start, as scopes do; neither
/// copyable nor movable, so that it stays in its scope.
class range {
public:
    /// @brief Starts a range called @p name (copied only while ranges are on).
    explicit range(std::string_view name, colour shade = colours::none,
                   const domain& where = domain::cudagap())
    {
        if (enabled()) {
            start(where, std::string(name), shade);
        }
    }

    /// @brief Starts a range whose name @p build returns; @p build runs only while ranges are
    /// on, so a name made of shapes and sizes costs nothing when they are off.
    template <detail::name_builder Builder>
    explicit range(Builder&& build, colour shade = colours::none,
                   const domain& where = domain::cudagap())
    {
        if (enabled()) {
            start(where, std::string(build()), shade);
        }
    }

    /// @brief Ends the range, if it started.
    ~range()
    {
        if (domain_ != nullptr) {
            detail::pop(*domain_);
        }
    }

    range(const range&) = delete;
    range& operator=(const range&) = delete;
    range(range&&) = delete;
    range& operator=(range&&) = delete;

    /// @brief Whether this range was started (ranges were on at its construction).
    [[nodiscard]] bool active() const noexcept { return domain_ != nullptr; }

private:
    void start(const domain& where, std::string name, colour shade)
    {
        detail::push(where, std::move(name), shade);
        domain_ = &where;
    }

    const domain* domain_ = nullptr;
};

/// @brief Marks an instant called @p name (while ranges are on).
inline void mark(std::string_view name, colour shade = colours::none,
                 const domain& where = domain::cudagap())
{
    if (enabled()) {
        detail::mark(where, std::string(name), shade);
    }
}

/// @brief Marks an instant whose name @p build returns; @p build runs only while ranges are on.
template <detail::name_builder Builder>
void mark(Builder&& build, colour shade = colours::none, const domain& where = domain::cudagap())
{
    if (enabled()) {
        detail::mark(where, std::string(build()), shade);
    }
}

/// @brief A byte count as cudagap's range names write it: `512 B`, `12 KiB`, `12 MiB`,
/// `1.5 GiB` (whole numbers where exact, else one decimal).
[[nodiscard]] std::string size_name(std::size_t bytes);

} // namespace gpu::nvtx
