/// @file memory_tag.hpp
/// @brief What an allocation is for: `memory_category` (the kinds of holder the ledger knows),
/// `memory_tag` (a category with a name and a fix), and `memory_tag_scope`, which tags the
/// allocations a thread makes while it lives.
///
/// The core names no library: it knows the categories (parameters, activations, workspaces,
/// ...) and a tag for each. A layer above defines its own tags, with its name and the fix that
/// matches it, once per process (`memory_tag::define("cuDNN plan workspace",
/// memory_category::workspace, "lower cuDNN's workspace budget ...")`, or a
/// `memory_tag_definition` that defines it on first use), and allocates under them.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <source_location>
#include <string>
#include <string_view>

namespace gpu {

/// @brief The kinds of holder of device memory that the ledger's table and the out-of-memory
/// advice know. Each has a standard tag (`memory_tag::standard`) and a default fix.
enum class memory_category : std::uint8_t {
    user,             ///< the user's own buffers (and what is not tagged otherwise)
    parameters,       ///< a model's weights (FP32 masters)
    gradients,        ///< the gradients of the parameters
    working_copy,     ///< a low-precision copy of the parameters for mixed precision
    optimizer_state,  ///< an optimizer's per-parameter state (Adam's moments)
    activations,      ///< a layer's outputs kept for the backward pass or the next layer
    scratch,          ///< temporaries of one step
    workspace,        ///< a library's workspace (a GEMM's, a convolution plan's)
    planning_scratch, ///< memory an algorithm search allocates while it plans
    graph_pool,       ///< memory owned by CUDA graphs (their allocation nodes)
    communicator,     ///< a communication library's own buffers, measured around its set-up
};

/// @brief The number of categories (the standard tags are ids 0 to this minus one).
inline constexpr std::size_t memory_category_count = 11;

/// @brief The category's name as the ledger prints it, e.g. `"optimizer state"`.
[[nodiscard]] std::string_view to_string(memory_category category) noexcept;

/// @brief What to do when this kind of holder fills the device (the out-of-memory advice).
[[nodiscard]] std::string_view default_fix(memory_category category) noexcept;

/// @brief What an allocation is for: a name, a category and a fix, interned once per process
/// and carried as a 2-byte id. Cheap to copy and compare; the default is `user()`.
///
/// The standard tags (one per category, named as the category) need no definition. A tag a
/// layer or the user defines lives until the process ends; define tags for kinds of memory (a
/// cache, a library's workspace), not for single buffers: there are at most 1024.
class memory_tag {
public:
    /// @brief The most tags a process can have, the standard ones included.
    static constexpr std::size_t max_tags = 1024;

    /// @brief The `user` tag.
    constexpr memory_tag() noexcept = default;

    /// @brief The standard tag of @p category, named as it (`"activations"`).
    [[nodiscard]] static constexpr memory_tag standard(memory_category category) noexcept
    {
        return memory_tag(static_cast<std::uint16_t>(category));
    }

    /// @brief The user's own buffers: the tag of everything not tagged otherwise.
    [[nodiscard]] static constexpr memory_tag user() noexcept { return {}; }

    /// @brief A user-given name, in the `user` category (`memory_tag::named("kv cache")`): the
    /// same tag for the same name.
    /// @throws std::invalid_argument when @p name is empty, is the name of a tag of another
    /// category (a standard one's, such as `"activations"`), or the process has `max_tags` tags
    [[nodiscard]] static memory_tag named(std::string_view name);

    /// @brief Defines a tag (or finds the one defined before under @p name) with its category
    /// and the fix the out-of-memory advice gives when it holds the most (empty: the
    /// category's). Thread-safe; a second definition with the same category returns the same
    /// tag and keeps the first fix.
    /// @throws std::invalid_argument when @p name is empty, names a tag of another category (a
    /// standard one's included), or the process has `max_tags` tags
    [[nodiscard]] static memory_tag define(std::string_view name, memory_category category,
                                           std::string_view fix = {});

    /// @brief The tag with id @p id, as `id()` gave it.
    /// @throws std::invalid_argument when no tag has that id
    [[nodiscard]] static memory_tag from_id(std::uint16_t id);

    /// @brief The id: the index of the tag in the process (0 is `user`).
    [[nodiscard]] constexpr std::uint16_t id() const noexcept { return id_; }

    /// @brief The name, e.g. `"activations"` or `"cuDNN plan workspace"`.
    [[nodiscard]] std::string name() const;

    /// @brief The category.
    [[nodiscard]] memory_category category() const;

    /// @brief The fix given when this tag holds the most: its own, or its category's.
    [[nodiscard]] std::string fix() const;

    /// @brief Tags are equal when their ids are.
    friend constexpr bool operator==(memory_tag, memory_tag) noexcept = default;

private:
    friend class memory_tag_definition; // makes the tag from the id it cached
    constexpr explicit memory_tag(std::uint16_t id) noexcept : id_(id) {}

    std::uint16_t id_ = 0;
};

/// @brief A tag written as a constant (name, category, fix) and defined on its first use: a
/// layer's tags then read as one table, each defined once per process however many places
/// allocate under it. Thread-safe; neither copyable nor movable (it caches the tag's id).
///
/// @code
/// inline constinit gpu::memory_tag_definition kv_cache_tag{
///     "kv cache", gpu::memory_category::user, "serve fewer sequences at once"};
/// gpu::device_buffer<std::byte> cache(bytes, stream, kv_cache_tag());
/// @endcode
class memory_tag_definition {
public:
    /// @brief The definition; nothing is defined until the first call.
    /// @param name the tag's name (see `memory_tag::define`); must outlive the definition
    /// @param category its category
    /// @param fix the fix the out-of-memory advice gives when it holds the most (empty: the
    /// category's); must outlive the definition
    constexpr memory_tag_definition(std::string_view name, memory_category category,
                                    std::string_view fix = {}) noexcept
        : name_(name), fix_(fix), category_(category)
    {}
    memory_tag_definition(const memory_tag_definition&) = delete;
    memory_tag_definition& operator=(const memory_tag_definition&) = delete;

    /// @brief The tag: `memory_tag::define(name, category, fix)` on the first call, the same
    /// tag without a look-up after.
    /// @throws std::invalid_argument as `memory_tag::define` does
    [[nodiscard]] memory_tag operator()() const;

private:
    std::string_view name_;
    std::string_view fix_;
    memory_category category_;
    // 0 until defined: the id of `user`, which no definition of another category can have.
    mutable std::atomic<std::uint16_t> id_{0};
};

/// @brief Tags the allocations the calling thread makes while it lives (those through
/// `gpu::ledger_resource`s without a tag of their own, the default resource's among them),
/// and names the source location an allocation error reports. Scopes nest; the innermost
/// wins; each restores the one before when it ends. Costs two thread-local writes.
///
/// @code
/// {
///     const gpu::memory_tag_scope tagged(
///         gpu::memory_tag::standard(gpu::memory_category::activations));
///     plan_layers();   // everything it allocates is "activations"
/// }
/// @endcode
class memory_tag_scope {
public:
    /// @brief Tags what the thread allocates from now on with @p tag; errors name @p where.
    explicit memory_tag_scope(
        memory_tag tag, std::source_location where = std::source_location::current()) noexcept;
    /// @brief Restores the scope that was innermost before.
    ~memory_tag_scope();
    memory_tag_scope(const memory_tag_scope&) = delete;
    memory_tag_scope& operator=(const memory_tag_scope&) = delete;

    /// @brief The tag of this scope.
    [[nodiscard]] memory_tag tag() const noexcept { return tag_; }
    /// @brief The source location allocation errors report inside this scope.
    [[nodiscard]] const std::source_location& where() const noexcept { return where_; }

private:
    memory_tag tag_;
    std::source_location where_;
    const memory_tag_scope* previous_;
};

/// @brief The tag of the calling thread's innermost `memory_tag_scope`, or `user()`.
[[nodiscard]] memory_tag current_memory_tag() noexcept;

namespace detail {
/// @brief The source location of the calling thread's innermost `memory_tag_scope`, or
/// @p fallback: what a resource's allocation error reports.
[[nodiscard]] std::source_location allocation_site_or(std::source_location fallback) noexcept;
} // namespace detail

} // namespace gpu
